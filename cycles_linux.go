package cputime

import (
	"sync"

	"github.com/cputime/cputime/internal/engine"
	"github.com/cputime/cputime/internal/freq"
)

// referenceFrequency is computed once, on first use: the calibration it may
// run must never happen at import, nor unless cycles are asked for.
var referenceFrequency = sync.OnceValues(func() (CycleFrequency, error) {
	return frequencyFrom(freq.Reference())
})

// onCPUNanos returns the process's exact on-CPU nanoseconds, the total
// Times splits; for the CurrentProcess pseudo-handle, one read of the
// caller's own process CPU clock.
func (p *Process) onCPUNanos() (uint64, error) {
	if p.pseudo {
		return engine.CurrentProcessOnCPU()
	}
	if p.sys == nil {
		return 0, ErrClosed // a zero handle
	}
	return p.sys.h.OnCPUNanos()
}

// onCPUNanos returns the thread's exact on-CPU nanoseconds, as Times reads
// them; for the CurrentThread pseudo-handle, the calling thread's clock.
func (t *Thread) onCPUNanos() (uint64, error) {
	if t.pseudo {
		return engine.CurrentThreadOnCPU()
	}
	if t.sys == nil {
		return 0, ErrClosed // a zero handle
	}
	return t.sys.h.OnCPUNanos()
}

func processCycleNanos(pid int) (uint64, bool, error) {
	return engine.Default.ProcessCycleNanos(pid)
}

func threadCycleNanos(tid int) (uint64, bool) { return engine.Default.ThreadCycleNanos(tid) }

func appendIdleNanos(dst []uint64) ([]uint64, error) { return engine.Default.AppendIdleNanos(dst) }
