//go:build linux

package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/procfs"
	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/bench/internal/child"
)

// Each benchmark does the same work through each library, used as its
// documentation suggests: a handle (cputime.Process, gopsutil's
// *process.Process, procfs.Proc) is made once outside the loop, as a program
// that reads the same task repeatedly would; the OneShot variants make it
// inside the loop. Every read result is checked and consumed, so no library
// gets credit for work the compiler removed.

var sinkDuration time.Duration
var sinkFloat float64

func procFS(b *testing.B) procfs.FS {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		b.Fatal(err)
	}
	return fs
}

// BenchmarkProcessTimes reads kernel+user time of another (idle) process
// through a handle made once.
func BenchmarkProcessTimes(b *testing.B) {
	c := startChild(b, "idle")
	pid := c.PID()
	b.Run("cputime", func(b *testing.B) {
		h, err := cputime.OpenProcess(pid)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		b.ReportAllocs()
		for b.Loop() {
			t, err := h.Times()
			if err != nil {
				b.Fatal(err)
			}
			sinkDuration = t.Kernel + t.User
		}
	})
	b.Run("gopsutil", func(b *testing.B) {
		p, err := process.NewProcess(int32(pid))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			t, err := p.Times()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = t.User + t.System
		}
	})
	b.Run("procfs", func(b *testing.B) {
		p, err := procFS(b).Proc(pid)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			s, err := p.Stat()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = s.CPUTime()
		}
	})
}

// BenchmarkProcessTimesOneShot is BenchmarkProcessTimes with the handle made
// (and for cputime closed) on every read.
func BenchmarkProcessTimesOneShot(b *testing.B) {
	c := startChild(b, "idle")
	pid := c.PID()
	b.Run("cputime", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := cputime.ProcessTimes(pid)
			if err != nil {
				b.Fatal(err)
			}
			sinkDuration = t.Kernel + t.User
		}
	})
	b.Run("gopsutil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := process.NewProcess(int32(pid))
			if err != nil {
				b.Fatal(err)
			}
			t, err := p.Times()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = t.User + t.System
		}
	})
	b.Run("procfs", func(b *testing.B) {
		fs := procFS(b)
		b.ReportAllocs()
		for b.Loop() {
			p, err := fs.Proc(pid)
			if err != nil {
				b.Fatal(err)
			}
			s, err := p.Stat()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = s.CPUTime()
		}
	})
}

// BenchmarkSelfTimes reads the calling process's times.
func BenchmarkSelfTimes(b *testing.B) {
	b.Run("cputime", func(b *testing.B) {
		h := cputime.CurrentProcess()
		b.ReportAllocs()
		for b.Loop() {
			t, err := h.Times()
			if err != nil {
				b.Fatal(err)
			}
			sinkDuration = t.Kernel + t.User
		}
	})
	b.Run("gopsutil", func(b *testing.B) {
		p, err := process.NewProcess(int32(os.Getpid()))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			t, err := p.Times()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = t.User + t.System
		}
	})
	b.Run("procfs", func(b *testing.B) {
		p, err := procFS(b).Self()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			s, err := p.Stat()
			if err != nil {
				b.Fatal(err)
			}
			sinkFloat = s.CPUTime()
		}
	})
}

// BenchmarkThreadTimesOwn reads a thread of the calling process: the one
// the benchmark runs on, locked. gopsutil has no call for one thread.
func BenchmarkThreadTimesOwn(b *testing.B) {
	b.Run("cputime", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h, err := cputime.OpenThread(cputime.CurrentThreadID())
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		benchThreadHandle(b, h)
	})
	b.Run("procfs", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t, err := procFS(b).Thread(os.Getpid(), unix.Gettid())
		if err != nil {
			b.Fatal(err)
		}
		benchProcfsThread(b, t)
	})
}

// BenchmarkThreadTimesOther reads the main thread of another, idle process.
func BenchmarkThreadTimesOther(b *testing.B) {
	c := startChild(b, "idle")
	benchOtherThread(b, c)
}

// BenchmarkThreadTimesOtherBusy reads a thread of another process that
// spins all the time, so its runtime has always moved since the last read.
func BenchmarkThreadTimesOtherBusy(b *testing.B) {
	c := startChild(b, "spin")
	benchOtherThread(b, c)
}

func benchOtherThread(b *testing.B, c *child.Child) {
	b.Run("cputime", func(b *testing.B) {
		h, err := cputime.OpenThread(c.TID)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		benchThreadHandle(b, h)
	})
	b.Run("procfs", func(b *testing.B) {
		t, err := procFS(b).Thread(c.PID(), c.TID)
		if err != nil {
			b.Fatal(err)
		}
		benchProcfsThread(b, t)
	})
}

func benchThreadHandle(b *testing.B, h *cputime.Thread) {
	b.ReportAllocs()
	for b.Loop() {
		t, err := h.Times()
		if err != nil {
			b.Fatal(err)
		}
		sinkDuration = t.Kernel + t.User
	}
}

func benchProcfsThread(b *testing.B, t procfs.Proc) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := t.Stat()
		if err != nil {
			b.Fatal(err)
		}
		sinkFloat = s.CPUTime()
	}
}

// BenchmarkCreationTime reads the creation time of another process, one
// shot: gopsutil caches the creation time in its Process, so a handle kept
// across reads would measure a field load. Each library converts to a
// wall-clock instant its own way: cputime from CLOCK_BOOTTIME, gopsutil and
// procfs from /proc/stat's btime, which both read on every call.
func BenchmarkCreationTime(b *testing.B) {
	c := startChild(b, "idle")
	pid := c.PID()
	var sink int64
	b.Run("cputime", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := cputime.ProcessTimes(pid)
			if err != nil {
				b.Fatal(err)
			}
			sink = t.Creation.UnixNano()
		}
	})
	b.Run("gopsutil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := process.NewProcess(int32(pid))
			if err != nil {
				b.Fatal(err)
			}
			ms, err := p.CreateTime()
			if err != nil {
				b.Fatal(err)
			}
			sink = ms
		}
	})
	b.Run("procfs", func(b *testing.B) {
		fs := procFS(b)
		b.ReportAllocs()
		for b.Loop() {
			p, err := fs.Proc(pid)
			if err != nil {
				b.Fatal(err)
			}
			s, err := p.Stat()
			if err != nil {
				b.Fatal(err)
			}
			sec, err := s.StartTime()
			if err != nil {
				b.Fatal(err)
			}
			sink = int64(sec * 1e9)
		}
	})
	_ = sink
}

// BenchmarkSyscallFloor is one clock_gettime on a process CPU clock
// (CPUCLOCK_SCHED: the exact runtime, summed over the process's threads):
// the least any library can spend to learn a process's CPU time.
func BenchmarkSyscallFloor(b *testing.B) {
	c := startChild(b, "idle")
	b.Run("other", func(b *testing.B) {
		benchClock(b, int32(^c.PID())<<3|2) // CPUCLOCK_SCHED of that pid
	})
	b.Run("self", func(b *testing.B) {
		benchClock(b, unix.CLOCK_PROCESS_CPUTIME_ID)
	})
}

func benchClock(b *testing.B, clock int32) {
	var ts unix.Timespec
	b.ReportAllocs()
	for b.Loop() {
		if err := unix.ClockGettime(clock, &ts); err != nil {
			b.Fatal(err)
		}
	}
	sinkDuration = time.Duration(ts.Nano())
}

func TestRecordSize(t *testing.T) {
	t.Logf("one cputime.ThreadInfo: %d bytes plus its name", unsafe.Sizeof(cputime.ThreadInfo{}))
}
