package cputime_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// The syscall floor (DESIGN §5), measured in the same run as the queries
// (the README's table; runs of 20,000 iterations are too short on a noisy
// VM):
//
//	go test -run '^$' -bench 'Floor/^(clock|pread|poll|probe|stat|open)$|Queries/^(process|thread)$/' -benchmem -benchtime 200000x -count 10 . | tee new.txt
//	go test -run '^$' -bench 'Floor/scan|Queries/threads' -benchmem -benchtime 100x -count 8 . | tee -a new.txt
//	benchstat new.txt
//
// As root, each benchmark also reports syscalls/op: a perf_event counter of
// the raw_syscalls:sys_enter tracepoint on the benchmark's thread (tracefs
// is mounted if it is not).

// syscallCounter counts the system calls the calling thread enters; the
// caller must stay locked to its thread. nil where the machine does not
// allow it (not root, no tracefs, no perf_event).
type syscallCounter struct{ fd int }

func tracepointID() (uint64, bool) {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if b, err := os.ReadFile(dir + "/events/raw_syscalls/sys_enter/id"); err == nil {
			id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			return id, err == nil
		}
	}
	if os.Geteuid() == 0 && unix.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, "") == nil {
		if b, err := os.ReadFile("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id"); err == nil {
			id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			return id, err == nil
		}
	}
	return 0, false
}

func newSyscallCounter() *syscallCounter {
	id, ok := tracepointID()
	if !ok {
		return nil
	}
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Config: id,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &syscallCounter{fd: fd}
}

func (c *syscallCounter) start() { unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_ENABLE, 0) }

// stop returns the count since start, less the ioctl that stopped it.
func (c *syscallCounter) stop() uint64 {
	unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	var b [8]byte
	unix.Read(c.fd, b[:])
	unix.Close(c.fd)
	n := binary.NativeEndian.Uint64(b[:])
	if n > 0 {
		n--
	}
	return n
}

// benchOp runs op b.N times on a locked thread and reports syscalls/op
// where they can be counted.
func benchOp(b *testing.B, op func() error) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := op(); err != nil { // warm: first-use setup is not the steady state
		b.Fatal(err)
	}
	c := newSyscallCounter()
	if c != nil {
		c.start()
	}
	n := 0
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if c != nil {
		b.ReportMetric(float64(c.stop())/float64(n), "syscalls/op")
	}
}

func readClockRaw(id int32) error {
	var ts unix.Timespec
	_, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// BenchmarkFloor is what a query cannot go below: one CPU-clock read, one
// pread of a kept-open schedstat file, and the raw open/pread/close of the
// two files a scan reads per thread.
func BenchmarkFloor(b *testing.B) {
	b.Run("clock", func(b *testing.B) {
		c := startChild(b, "idle")
		id := int32(^c.pid())<<3 | 2 // the process's CPUCLOCK_SCHED
		benchOp(b, func() error { return readClockRaw(id) })
	})
	// The calling thread's own clock: a running task's clock also brings
	// its run time up to date (the scheduler's clock read, under the run
	// queue's lock), so it is dearer than an idle task's. Own-thread queries
	// are measured against it.
	b.Run("clock/self", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchOp(b, func() error { return readClockRaw(unix.CLOCK_THREAD_CPUTIME_ID) })
	})
	// An open and close of a /proc stat file, part of every one-shot
	// query: by absolute path, as the one-shots open them, and relative to
	// a kept descriptor of /proc, which would skip the walk of "/proc"
	// (docs/figures.md: no difference, the path's first components are
	// cached).
	b.Run("open/absolute", func(b *testing.B) {
		c := startChild(b, "idle")
		path := fmt.Sprintf("/proc/%d/stat", c.pid())
		benchOp(b, func() error {
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		})
	})
	b.Run("open/relative", func(b *testing.B) {
		c := startChild(b, "idle")
		dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(dir)
		rel := fmt.Sprintf("%d/stat", c.pid())
		benchOp(b, func() error {
			fd, err := unix.Openat(dir, rel, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		})
	})
	b.Run("pread", func(b *testing.B) {
		c := startChild(b, "idle")
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/schedstat", c.pid(), c.tid))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		var buf [256]byte
		benchOp(b, func() error { _, err := unix.Pread(fd, buf[:], 0); return err })
	})
	// The other raw calls queries make, so that each query can be set
	// beside the sum of the calls it needs: the poll of a pidfd that proves
	// a process handle's task is still its own, and the pread of a
	// process's stat file, which a one-shot needs for the start time.
	b.Run("poll", func(b *testing.B) {
		c := startChild(b, "idle")
		fd, err := unix.PidfdOpen(c.pid(), 0)
		if err != nil {
			b.Skipf("no pidfd: %v", err)
		}
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		var zero unix.Timespec
		benchOp(b, func() error { _, err := unix.Ppoll(fds, &zero, nil); return err })
	})
	// The same check through an epoll instance holding only the pidfd,
	// as a handle's exit probe makes it (internal/kernel.OpenExitProbe).
	b.Run("probe", func(b *testing.B) {
		c := startChild(b, "idle")
		fd, err := unix.PidfdOpen(c.pid(), 0)
		if err != nil {
			b.Skipf("no pidfd: %v", err)
		}
		defer unix.Close(fd)
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(ep)
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			b.Fatal(err)
		}
		var evs [1]unix.EpollEvent
		benchOp(b, func() error { _, err := unix.EpollWait(ep, evs[:], 0); return err })
	})
	b.Run("stat", func(b *testing.B) {
		c := startChild(b, "idle")
		f, err := os.Open(fmt.Sprintf("/proc/%d/stat", c.pid()))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		var buf [2048]byte
		benchOp(b, func() error { _, err := unix.Pread(fd, buf[:], 0); return err })
	})
	b.Run("scan/1000", func(b *testing.B) {
		c := startChild(b, "threads:1000")
		dirs := taskDirs(b, c.pid())
		var buf [2048]byte
		benchOp(b, func() error {
			for _, d := range dirs {
				for _, name := range [2]string{d + "/stat", d + "/schedstat"} {
					fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
					if err != nil {
						return err
					}
					unix.Pread(fd, buf[:], 0)
					unix.Close(fd)
				}
			}
			return nil
		})
	})
}

func taskDirs(b *testing.B, pid int) []string {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, fmt.Sprintf("/proc/%d/task/%s", pid, e.Name()))
	}
	return dirs
}

// BenchmarkQueries are the queries the floor bounds, with syscall counts.
func BenchmarkQueries(b *testing.B) {
	times := func(read func() (cputime.Times, error)) func() error {
		return func() error { _, err := read(); return err }
	}
	b.Run("process/handle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenProcess(b, c.pid())
		benchOp(b, times(h.Times))
	})
	// The same with a poll of the pidfd after the clock instead of the
	// handle's exit probe (kernel.OpenExitProbe).
	b.Run("process/handle/poll", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenProcessBy(b, cputime.NewEngine(cputime.EngineConfig{NoExitProbe: true}), c.pid())
		benchOp(b, times(h.Times))
	})
	b.Run("process/oneshot", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOp(b, times(func() (cputime.Times, error) { return cputime.ProcessTimes(c.pid()) }))
	})
	// A first read of a process (the stat path) and a second (the pidfd
	// path, which reads the stat line as well, once): each by an Engine
	// that has read nothing before.
	b.Run("process/oneshot/first", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOp(b, times(func() (cputime.Times, error) {
			return cputime.NewEngine(cputime.EngineConfig{}).ProcessTimes(c.pid())
		}))
	})
	b.Run("process/oneshot/second", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOp(b, times(func() (cputime.Times, error) {
			e := cputime.NewEngine(cputime.EngineConfig{})
			e.ProcessTimes(c.pid())
			return e.ProcessTimes(c.pid())
		}))
	})
	b.Run("process/current", func(b *testing.B) { benchOp(b, times(cputime.CurrentProcess().Times)) })
	b.Run("thread/own/handle", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h := mustOpenThread(b, unix.Gettid())
		benchOp(b, times(h.Times))
	})
	b.Run("thread/current", func(b *testing.B) { benchOp(b, times(cputime.CurrentThread().Times)) })
	b.Run("thread/other/handle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenThread(b, c.tid)
		benchOp(b, times(h.Times))
	})
	b.Run("thread/other/oneshot", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOp(b, times(func() (cputime.Times, error) { return cputime.ThreadTimes(c.tid) }))
	})
	b.Run("thread/other/oneshot/first", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOp(b, times(func() (cputime.Times, error) {
			return cputime.NewEngine(cputime.EngineConfig{}).ThreadTimes(c.tid)
		}))
	})
	b.Run("process/cycles/oneshot", func(b *testing.B) {
		c := startChild(b, "idle")
		if _, err := cputime.ReferenceFrequency(); err != nil {
			b.Skip(err)
		}
		benchOp(b, func() error { _, err := cputime.ProcessCycleTime(c.pid()); return err })
	})
	b.Run("thread/own/cycles/oneshot", func(b *testing.B) {
		if _, err := cputime.ReferenceFrequency(); err != nil {
			b.Skip(err)
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		benchOp(b, func() error { _, err := cputime.ThreadCycleTime(tid); return err })
	})
	// The scan runs on worker goroutines (scan_linux.go), which a caller
	// locked to its thread, as benchOp locks it to count its system calls,
	// would have to hand each chunk to across OS threads: 1.36× the raw
	// scan instead of 1.1× (2-vCPU VM). So the scan is timed unlocked, and
	// its system calls are counted with -cpu 1, where it runs on the
	// caller's thread: 6 per thread.
	b.Run("threads/1000", func(b *testing.B) {
		c := startChild(b, "threads:1000")
		scan := func() error {
			for _, err := range cputime.Threads(c.pid()) {
				if err != nil {
					return err
				}
			}
			return nil
		}
		if runtime.GOMAXPROCS(0) == 1 {
			benchOp(b, scan)
			return
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := scan(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
