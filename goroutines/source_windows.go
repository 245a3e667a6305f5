package goroutines

import (
	"fmt"
	"time"

	"github.com/cputime/cputime/internal/winapi"
)

// monoNow reads QueryPerformanceCounter in ns: fine (100 ns at the usual
// 10 MHz) where the runtime's nanotime, the clock of the trace's clock
// snapshots, advances a clock interrupt at a time (on windows/amd64 it is
// KUSER_SHARED_DATA.InterruptTime × 100; under Wine it also lags by however
// late the wineserver updates it). The engine's offset comes from the sync
// events the source writes into the trace instead (clocksync.go).
func monoNow() int64 {
	var c int64
	winapi.QueryPerformanceCounter(&c) // cannot fail since Windows XP
	return c/qpcHz*1e9 + c%qpcHz*1e9/qpcHz
}

var qpcHz = func() int64 {
	var f int64
	if winapi.QueryPerformanceFrequency(&f); f <= 0 {
		return 1e7
	}
	return f
}()

// Windows' GetThreadTimes advance at the clock interrupt, by its interval
// (15.625 ms unless a program raised the timer's rate): a sample more
// often than that mostly reads the same times. A Watcher, which runs for
// the program's life, samples less often: each round reads the system's
// process snapshot, whose cost grows with every thread on the machine.
const (
	recordSample = 16 * time.Millisecond
	watchSample  = 100 * time.Millisecond
)

func openSource(e *engine) (cpuSource, error)      { return openSampled(e, recordSample) }
func openWatchSource(e *engine) (cpuSource, error) { return openSampled(e, watchSample) }

func openSampled(e *engine, every time.Duration) (cpuSource, error) {
	s, err := openSampler(e)
	if err != nil {
		return nil, fmt.Errorf("reading the threads' CPU times: %w", err)
	}
	s.every = every
	e.mu.Lock()
	e.shareByRunning, e.coarse = true, true
	e.mu.Unlock()
	e.logSync() // before the window opens: every event counted comes after it
	s.why = fmt.Sprintf("Windows has no per-thread context-switch records for a process: CPU is each thread's GetThreadTimes growth, sampled every %v and shared among the goroutines that ran on it by running time. "+
		"Windows advances those times a clock-interrupt quantum (15.6 ms unless the timer's rate was raised) at a time, charged to the thread the interrupt finds running, so a goroutine's figure is an estimate, to about a quantum for each sample it ran in: "+
		"good over many quanta, coarse for a goroutine that ran less than a few (one that ran 1 ms may show 0 or 15.6 ms), and the runtime's work on a thread between its goroutines counts as theirs", every)
	return syncedSampler{s}, nil
}

// syncedSampler writes a sync event into the trace every round, so that
// the offset follows the drift of the trace's clock (the processor's
// tick counter, at a rate the runtime estimated) from monoNow's.
type syncedSampler struct{ *sampler }

func (s syncedSampler) drain(final bool, end int64) {
	if !final { // the tracer has stopped
		s.e.logSync()
	}
	s.sampler.drain(final, end)
}
