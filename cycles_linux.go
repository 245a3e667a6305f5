package cputime

import (
	"sync"

	"github.com/cputime/cputime/internal/procfs"
)

// referenceFrequency is computed once, on first use: the calibration it may
// run must never happen at import.
var referenceFrequency = sync.OnceValues(archFrequency)

// The two functions below read a handle's exact on-CPU nanoseconds, the
// same total Times splits into Kernel and User, through the fields that
// times_linux.go keeps. They are the only code of the cycle times that
// knows those fields: when the handles' internals change, only these change.

// onCPUNanos returns the process's exact on-CPU time in nanoseconds, all
// threads included, exited ones too: its CPUCLOCK_SCHED process clock. For
// the CurrentProcess pseudo-handle, one clock_gettime of the caller's own
// process clock.
func (p *Process) onCPUNanos() (uint64, error) {
	if p.pseudo {
		ns, e := readClock(processClock(0, cpuclockSched))
		if e != 0 {
			return 0, clockError("process", e)
		}
		return ns, nil
	}
	if p.sys.closed.Load() {
		return 0, ErrClosed
	}
	ns, e := readClock(processClock(p.pid, cpuclockSched))
	if e != 0 {
		return 0, clockError("process", e)
	}
	return ns, nil
}

// onCPUNanos returns the thread's exact on-CPU time in nanoseconds: its
// thread CPU clock for a thread of this process (the calling thread's own
// clock for the CurrentThread pseudo-handle), else its schedstat run time,
// else, on kernels without schedstat, its stat file's whole ticks, exactly
// as Times reads them.
func (t *Thread) onCPUNanos() (uint64, error) {
	if t.pseudo {
		ns, e := readClock(threadClock(0, cpuclockSched))
		if e != 0 {
			return 0, clockError("thread", e)
		}
		return ns, nil
	}
	s := &t.sys
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if s.stat == nil {
		ns, e := readClock(threadClock(t.tid, cpuclockSched))
		if e != 0 {
			return 0, clockError("thread", e)
		}
		return ns, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() { // closed while we waited for the lock
		return 0, ErrClosed
	}
	if s.schedstat == nil {
		st, err := s.readStat(s.stat)
		if err != nil {
			return 0, err
		}
		return ticksToNanos(st.UTime + st.STime), nil
	}
	n, err := s.schedstat.ReadAt0(s.buf[:])
	if err != nil {
		return 0, sysError(err)
	}
	ss, err := procfs.ParseSchedstat(s.buf[:n])
	if err != nil {
		return 0, err
	}
	return ss.RunTime, nil
}
