package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// perfBitInheritThread is perf_event_attr.inherit_thread (bit 35 of the
// flags, Linux 5.13): inherit the counter into new threads only, not into
// child processes. x/sys/unix does not name it yet.
const perfBitInheritThread = 1 << 35

// eventSourceDevices lists the PMUs the kernel registered; a hardware PMU
// ("cpu" on x86, "cpu_core"/"cpu_atom" on hybrid Intel, "armv8_pmuv3_0" and
// the like on arm64) is whatever is not a software PMU.
const eventSourceDevices = "/sys/bus/event_source/devices"

var softwarePMUs = map[string]bool{
	"software": true, "tracepoint": true, "breakpoint": true, "uprobe": true,
	"kprobe": true, "msr": true, "power": true, "cstate_core": true, "cstate_pkg": true,
}

// CycleCounter is an open hardware cycle counter (cputime.CycleCounter).
type CycleCounter struct {
	mu  sync.Mutex
	fds []int // nil once closed
}

func cycleAttr(inherit bool) unix.PerfEventAttr {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_HARDWARE,
		Config:      unix.PERF_COUNT_HW_CPU_CYCLES,
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
		Bits:        unix.PerfBitExcludeHv,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	if inherit {
		attr.Bits |= unix.PerfBitInherit | perfBitInheritThread
	}
	return attr
}

// perfOpen opens a cycle counter on one thread, on whatever CPU it runs.
func perfOpen(tid int, inherit bool) (int, error) {
	attr := cycleAttr(inherit)
	fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, perfError(err)
	}
	return fd, nil
}

// perfError explains why perf_event_open failed, with the sentinel a caller
// tests for.
func perfError(err error) error {
	errno, _ := err.(unix.Errno)
	switch errno {
	case unix.ESRCH:
		return fmt.Errorf("%w: perf_event_open: %w", ErrNotFound, err)
	case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
		return fmt.Errorf("perf_event_open: %w: %w (%s)", err, ErrNotSupported, noPMUReason())
	case unix.EACCES, unix.EPERM:
		if reason := noPMUReason(); strings.HasPrefix(reason, "no hardware PMU") {
			// Permission would not help: say what is missing first.
			return fmt.Errorf("perf_event_open: %w: %w (%s)", err, ErrNotSupported, reason)
		}
		return fmt.Errorf("perf_event_open: %w: %w (%s)", err, ErrAccessDenied, paranoidReason())
	}
	return fmt.Errorf("perf_event_open: %w", err)
}

// noPMUReason describes the PMUs the kernel offers, for an error message.
func noPMUReason() string {
	entries, err := os.ReadDir(eventSourceDevices)
	if err != nil {
		return "the kernel has no hardware cycle event; " + eventSourceDevices + " is unreadable"
	}
	var hw []string
	for _, e := range entries {
		if !softwarePMUs[e.Name()] {
			hw = append(hw, e.Name())
		}
	}
	if len(hw) == 0 {
		return "no hardware PMU: " + eventSourceDevices + " lists only software event sources, as on most virtual machines"
	}
	return "the kernel's PMUs (" + strings.Join(hw, ", ") + ") offer no CPU cycle event"
}

// paranoidReason describes the perf_event_paranoid setting.
func paranoidReason() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "perf events are restricted"
	}
	level, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return fmt.Sprintf("kernel.perf_event_paranoid is %d; counting kernel-mode cycles needs ≤ 1, or CAP_PERFMON", level)
}

// OpenThread opens the counter on thread tid.
func (c *CycleCounter) OpenThread(tid int) error {
	fd, err := perfOpen(tid, false)
	if err != nil {
		return err
	}
	c.fds = []int{fd}
	return nil
}

// OpenProcess opens one inheriting counter per thread, then lists the
// threads again until no new one appears: a thread created by a counted
// thread inherits its counter, but one created by a thread not yet counted
// would be missed.
func (c *CycleCounter) OpenProcess(pid int) error {
	counted := map[int]bool{}
	for round := 0; ; round++ {
		tids, err := sysProc.LiveTIDs(pid)
		if err != nil {
			c.closeFds()
			return sysError(err)
		}
		added := false
		for _, tid := range tids {
			if counted[tid] {
				continue
			}
			fd, err := perfOpen(tid, true)
			if errors.Is(err, ErrNotFound) {
				continue // exited since it was listed
			}
			if errors.Is(err, unix.EINVAL) {
				c.closeFds()
				return fmt.Errorf("%w: %w (counting a whole process needs inherit_thread, Linux 5.13)", ErrNotSupported, err)
			}
			if err != nil {
				c.closeFds()
				return err
			}
			c.fds = append(c.fds, fd)
			counted[tid], added = true, true
		}
		if !added || round == 10 {
			break
		}
	}
	if len(c.fds) == 0 {
		return fmt.Errorf("%w: process %d has no threads left", ErrNotFound, pid)
	}
	return nil
}

// Read sums the counters: the raw count, and the nanoseconds it was
// enabled and running. Each read(2) of a counter returns its value, the
// time it was enabled and the time it ran (the read_format above), its
// inherited children's counts and times included.
func (c *CycleCounter) Read() (raw, enabled, running uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fds == nil {
		return 0, 0, 0, ErrClosed
	}
	var buf [3]uint64
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), unsafe.Sizeof(buf))
	for _, fd := range c.fds {
		n, err := unix.Read(fd, b)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("read: %w", err)
		}
		if n != len(b) {
			return 0, 0, 0, fmt.Errorf("read %d bytes of a perf counter, want %d", n, len(b))
		}
		raw += buf[0]
		enabled += buf[1]
		running += buf[2]
	}
	return raw, enabled, running, nil
}

// Close closes the counter; ErrClosed if it was closed already.
func (c *CycleCounter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fds == nil {
		return ErrClosed
	}
	return c.closeFds()
}

func (c *CycleCounter) closeFds() error {
	var err error
	for _, fd := range c.fds {
		err = errors.Join(err, unix.Close(fd))
	}
	c.fds = nil
	return err
}
