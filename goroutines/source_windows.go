package goroutines

import (
	"fmt"
	"time"
	_ "unsafe" // for go:linkname
)

// monoNow is the runtime's own nanotime, the clock of the Mono field of
// the trace's clock snapshots, which the engine's offset joins to the
// trace's time (on Windows the tracer stamps events with the processor's
// tick counter and pairs it with nanotime in each snapshot). On
// windows/amd64 both read KUSER_SHARED_DATA.InterruptTime × 100; no Win32
// call returns that clock in every Windows the runtime supports
// (QueryInterruptTime is Windows 10's, and Wine lacks it;
// QueryUnbiasedInterruptTime leaves out time asleep, so it parts from it
// after a suspend). The runtime lets packages link to nanotime.
//
//go:linkname monoNow runtime.nanotime
func monoNow() int64

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
	s.why = fmt.Sprintf("Windows has no per-thread context-switch records for a process: CPU is each thread's GetThreadTimes growth, sampled every %v and shared among the goroutines that ran on it by running time. "+
		"Windows advances those times a clock-interrupt quantum (15.6 ms unless the timer's rate was raised) at a time, charged to the thread the interrupt finds running, so a goroutine's figure is an estimate, to about a quantum for each sample it ran in: "+
		"good over many quanta, coarse for a goroutine that ran less than a few (one that ran 1 ms may show 0 or 15.6 ms), and the runtime's work on a thread between its goroutines counts as theirs", every)
	return s, nil
}
