package engine

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// The two functions below read a handle's exact on-CPU nanoseconds, the
// same total Times splits into Kernel and User, in one clock or schedstat
// read while the task runs; once it has exited, its final total, as Times
// reports it.

// OnCPUNanos returns the process's exact on-CPU time in nanoseconds, all
// threads included, exited ones too: its CPUCLOCK_SCHED process clock.
func (p *Process) OnCPUNanos() (uint64, error) {
	if p == nil {
		return 0, ErrClosed // a zero handle
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return 0, ErrClosed
	}
	if t, ok := p.exit.final(); ok {
		return uint64(t.Total()), nil
	}
	ns, e := readClock(processClock(p.pid, cpuclockSched))
	state, err := p.state()
	if err != nil {
		return 0, err
	}
	if state == kernel.TaskRunning {
		if e != 0 {
			return 0, clockError("process", e)
		}
		p.split.Extend(ns, p.kthread)
		return ns, nil
	}
	t, err := p.timesLocked() // records the exit
	return uint64(t.Total()), err
}

// OnCPUNanos returns the thread's exact on-CPU time in nanoseconds: its
// thread CPU clock for a thread of this process, else its schedstat run time,
// else, on kernels without schedstat, its stat file's whole ticks, exactly
// as Times reads them.
func (t *Thread) OnCPUNanos() (uint64, error) {
	if t == nil {
		return 0, ErrClosed // a zero handle
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return 0, ErrClosed
	}
	if r, ok := t.exit.final(); ok {
		return uint64(r.Total()), nil
	}
	if t.own {
		ns, e := readClock(threadClock(t.tid, cpuclockSched))
		state, err := t.state()
		if err != nil {
			return 0, err
		}
		if state == kernel.TaskRunning {
			if e != 0 {
				return 0, clockError("thread", e)
			}
			t.split.Extend(ns, t.kthread)
			return ns, nil
		}
	} else if t.schedstat != nil {
		var buf [256]byte
		n, err := t.schedstat.ReadAt0(buf[:])
		if err == nil {
			ss, err := procfs.ParseSchedstat(buf[:n])
			if err != nil {
				return 0, err
			}
			t.split.Extend(ss.RunTime, t.kthread)
			return ss.RunTime, nil
		}
		if !errors.Is(err, unix.ESRCH) {
			return 0, sysError(err)
		}
	}
	// Exited, or no schedstat: as Times has it.
	r, err := t.timesLocked()
	return uint64(r.Total()), err
}

// ProcessCycleNanos is ProcessCycleTime's path at the syscall floor: one
// read of the process's CPUCLOCK_SCHED clock by pid, which the kernel
// answers for any process of the caller's pid namespace, live or zombie,
// with no file opened and no handle. ok is false where that one read could
// answer differently from OpenProcess and CycleTime, and the caller takes
// the handle path: when /proc is mounted with hidepid (the handle would be
// refused; the clock is not), when /proc is not the caller's pid namespace's
// (its ids would not be the clock's), and under a fixture tree.
func (eng *Engine) ProcessCycleNanos(pid int) (ns uint64, ok bool, err error) {
	if pid <= 0 || !eng.native || !clockIsProc() {
		return 0, false, nil
	}
	ns, e := readClock(processClock(pid, cpuclockSched))
	if e != 0 {
		if e == unix.EINVAL {
			// The kernel's answer for an id that names a thread other than
			// its group's leader; OpenProcess says the same.
			return 0, true, fmt.Errorf("reading cycle time of process %d: %w: not a process id (a thread id?)", pid, ErrNotFound)
		}
		return 0, true, fmt.Errorf("reading cycle time of process %d: %w", pid, clockError("process", e))
	}
	return ns, true, nil
}

// ThreadCycleNanos is ThreadCycleTime's path at the syscall floor for a
// thread of the calling process: one read of its thread CPU clock, which
// the kernel answers only for the caller's own threads (EINVAL for any
// other). ok is false for another process's thread, and under a fixture
// tree: the handle path reads those.
func (eng *Engine) ThreadCycleNanos(tid int) (ns uint64, ok bool) {
	if tid <= 0 || !eng.native {
		return 0, false
	}
	ns, e := readClock(threadClock(tid, cpuclockSched))
	return ns, e == 0
}

// clockIsProc reports, once, whether /proc speaks of the same processes the
// CPU clocks do and hides none of them: it is the caller's pid namespace's
// (/proc/self names the caller) and is mounted without hidepid.
var clockIsProc = sync.OnceValue(func() bool {
	self, err := os.Readlink("/proc/self")
	if err != nil || self != strconv.Itoa(getpid()) {
		return false
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	// Mounts stacked on /proc are listed in mount order: the last is the
	// one in effect.
	visible := false
	for line := range strings.Lines(string(data)) {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS
		f := strings.Fields(line)
		if len(f) < 10 || f[4] != "/proc" {
			continue
		}
		visible = false
		sep := slices.Index(f, "-")
		if sep < 0 || sep+3 >= len(f) || f[sep+1] != "proc" {
			continue
		}
		visible = true
		for opt := range strings.SplitSeq(f[sep+3], ",") {
			if v, found := strings.CutPrefix(opt, "hidepid="); found && v != "0" && v != "off" {
				visible = false
			}
		}
	}
	return visible
})

// CurrentProcessOnCPU reads the calling process's own process CPU clock:
// the CurrentProcess pseudo-handle's on-CPU nanoseconds.
func CurrentProcessOnCPU() (uint64, error) {
	ns, e := readClock(processClock(0, cpuclockSched))
	if e != 0 {
		return 0, clockError("process", e)
	}
	return ns, nil
}

// CurrentThreadOnCPU reads the calling thread's own CPU clock.
func CurrentThreadOnCPU() (uint64, error) {
	ns, e := readClock(threadClock(0, cpuclockSched))
	if e != 0 {
		return 0, clockError("thread", e)
	}
	return ns, nil
}
