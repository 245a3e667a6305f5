package goroutines

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// openSource opens a recording's CPU source: context-switch records
// drained every 20 ms, else thread clocks sampled every 2 ms.
func openSource(e *engine) (cpuSource, error) { return openSourceAt(e, 0, 2*time.Millisecond) }

// A Watcher's pace: its counters lag by a trace period (a second) anyway,
// and each drain or sample reads every thread's CPU clock, for the
// program's whole life. The rings hold 10,000 records per CPU.
const (
	watchDrain  = 100 * time.Millisecond
	watchSample = 10 * time.Millisecond
)

func openWatchSource(e *engine) (cpuSource, error) { return openSourceAt(e, watchDrain, watchSample) }

// openSourceAt opens the context-switch records, drained every drain (0:
// the perf source's default), or failing that the sampled thread clocks,
// every sample.
func openSourceAt(e *engine, drain, sample time.Duration) (cpuSource, error) {
	p, err := openPerf(e)
	if err == nil {
		p.every = drain
		return p, nil
	}
	f, ferr := openSampler(e)
	if ferr != nil {
		return nil, fmt.Errorf("no CPU source: %w; and the fallback: %w", err, ferr)
	}
	f.every = sample
	e.mu.Lock()
	e.shareByRunning = true
	e.mu.Unlock()
	why := "the kernel refused context-switch records"
	if errors.Is(err, errPerfCap) {
		why = "context-switch records are not used"
	}
	f.why = fmt.Sprintf("%s (%v): CPU is %s", why, err, sampledCPU(f.every))
	return f, nil
}

// sampledCPU says what the fallback's figures are, sampled every every.
func sampledCPU(every time.Duration) string {
	return fmt.Sprintf("each thread's CPU-clock growth between samples %v apart, shared among the goroutines that ran on it by running time, so a goroutine's figure is an estimate (runtime work in the same sample may count as theirs)", every)
}
