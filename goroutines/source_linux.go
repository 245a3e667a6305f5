package goroutines

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// threadCPU reads thread tid's CPU clock (CPUCLOCK_SCHED): its exact
// runtime in ns, readable by its own process alone.
func threadCPU(tid int) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(kernel.ThreadClock(tid, kernel.ClockSched), &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func ownThreads() ([]int, error) { return procfs.NewFS("").TIDs(os.Getpid()) }

// perfEventOpen is unix.PerfEventOpen; tests replace it to refuse.
var perfEventOpen = unix.PerfEventOpen

func openSource(e *engine) (cpuSource, error) {
	p, err := openPerf(e)
	if err == nil {
		return p, nil
	}
	f, ferr := openSampler(e)
	if ferr != nil {
		return nil, fmt.Errorf("no CPU source: %w; and the fallback: %w", err, ferr)
	}
	e.mu.Lock()
	e.shareByRunning = true
	e.mu.Unlock()
	f.why = fmt.Sprintf("the kernel refused context-switch records (%v): CPU is each thread's CPU-clock growth between samples %v apart, shared among the goroutines that ran on it by running time, so a goroutine's figure is an estimate (runtime work in the same sample may count as theirs)", err, f.every)
	return f, nil
}
