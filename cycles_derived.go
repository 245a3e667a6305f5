//go:build !windows

package cputime

import "fmt"

// Where the system keeps no cycle count of its own (Linux), cycle times are
// derived: the exact on-CPU nanoseconds times the reference frequency.
// Windows reads its native counts instead (cycles_windows.go).

func (p *Process) cycleTime() (uint64, error) {
	f, err := referenceFrequency()
	if err != nil {
		return 0, err
	}
	ns, err := p.onCPUNanos()
	if err != nil {
		return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, err)
	}
	return cyclesFromNanos(ns, f.Hz), nil
}

func (t *Thread) cycleTime() (uint64, error) {
	f, err := referenceFrequency()
	if err != nil {
		return 0, err
	}
	ns, err := t.onCPUNanos()
	if err != nil {
		if t.pseudo {
			return 0, fmt.Errorf("reading cycle time of the calling thread: %w", err)
		}
		return 0, fmt.Errorf("reading cycle time of thread %d of process %d: %w", t.tid, t.pid, err)
	}
	return cyclesFromNanos(ns, f.Hz), nil
}

func appendIdleCycles(dst []uint64) ([]uint64, error) {
	f, err := referenceFrequency()
	if err != nil {
		return dst, err
	}
	n := len(dst)
	dst, err = appendIdleNanos(dst)
	if err != nil {
		return dst[:n], fmt.Errorf("reading idle processor times: %w", err)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = cyclesFromNanos(dst[i], f.Hz)
	}
	return dst, nil
}
