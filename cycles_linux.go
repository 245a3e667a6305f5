package cputime

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/freq"
	"github.com/cputime/cputime/internal/procfs"
)

// referenceFrequency is computed once, on first use: the calibration it may
// run must never happen at import, nor unless cycles are asked for.
var referenceFrequency = sync.OnceValues(func() (CycleFrequency, error) {
	return frequencyFrom(freq.Reference())
})

// The two functions below read a handle's exact on-CPU nanoseconds, the
// same total Times splits into Kernel and User, in one clock or schedstat
// read while the task runs; once it has exited, its final total, as Times
// reports it.

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
	s := p.sys
	if s == nil {
		return 0, ErrClosed // a zero handle
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	if t, ok := s.exit.final(); ok {
		return uint64(t.Total()), nil
	}
	ns, e := readClock(processClock(p.pid, cpuclockSched))
	state, err := s.state()
	if err != nil {
		return 0, err
	}
	if state == taskRunning {
		if e != 0 {
			return 0, clockError("process", e)
		}
		s.split.Extend(ns, s.kthread)
		return ns, nil
	}
	t, err := s.timesLocked(p) // records the exit
	return uint64(t.Total()), err
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
	s := t.sys
	if s == nil {
		return 0, ErrClosed // a zero handle
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	if r, ok := s.exit.final(); ok {
		return uint64(r.Total()), nil
	}
	if s.own {
		ns, e := readClock(threadClock(t.tid, cpuclockSched))
		state, err := s.state()
		if err != nil {
			return 0, err
		}
		if state == taskRunning {
			if e != 0 {
				return 0, clockError("thread", e)
			}
			s.split.Extend(ns, s.kthread)
			return ns, nil
		}
	} else if s.schedstat != nil {
		var buf [256]byte
		n, err := s.schedstat.ReadAt0(buf[:])
		if err == nil {
			ss, err := procfs.ParseSchedstat(buf[:n])
			if err != nil {
				return 0, err
			}
			s.split.Extend(ss.RunTime, s.kthread)
			return ss.RunTime, nil
		}
		if !errors.Is(err, unix.ESRCH) {
			return 0, sysError(err)
		}
	}
	// Exited, or no schedstat: as Times has it.
	r, err := s.timesLocked(t)
	return uint64(r.Total()), err
}
