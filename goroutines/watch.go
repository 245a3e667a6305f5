package goroutines

import (
	"errors"
	"fmt"
	"runtime/trace"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ErrWatching: a Watcher is already running in this process. There can be
// one, as there can be one runtime/trace.FlightRecorder.
var ErrWatching = errors.New("a Watcher is already running")

// DefaultMaxTypes is how many task types a Watcher counts apart unless
// WithMaxTypes says otherwise.
const DefaultMaxTypes = 200

// OverflowType names the type under which a Watcher counts the tasks whose
// types came past the limit (WithMaxTypes).
const OverflowType = "(overflow)"

// DefaultMaxPerfEvents is the most perf events (threads × CPUs) exact mode
// keeps unless WithMaxPerfEvents says otherwise: each is about 1.3 KiB of
// kernel memory (the perf_event slab object is 1,352 bytes on Linux 6.18),
// so 16,384 is about 22 MB, and a file descriptor for each thread there
// when watching began.
const DefaultMaxPerfEvents = 16384

// An Option configures Watch.
type Option func(*watchConfig)

type watchConfig struct {
	maxTypes int
	period   time.Duration
	maxBytes uint64
	maxPerf  int
}

// WithMaxTypes bounds the task types counted apart (default
// DefaultMaxTypes): the tasks of any further type count together as
// OverflowType.
func WithMaxTypes(n int) Option { return func(c *watchConfig) { c.maxTypes = n } }

// WithPeriod sets how often the Watcher takes the trace from the flight
// recorder (default 1 s): the counters lag the program by about that
// much, and each period costs the runtime a trace generation.
func WithPeriod(d time.Duration) Option { return func(c *watchConfig) { c.period = d } }

// WithMaxPerfEvents bounds the perf events exact mode keeps on Linux
// (default DefaultMaxPerfEvents): one per thread and CPU, each about 1.3
// KiB of kernel memory, and a file descriptor for each that a thread there
// at Watch holds (threads created later inherit theirs). Past it, at Watch
// or later as the process grows, the Watcher counts from sampled thread
// clocks instead, and Snapshot.Exact and Fallback say so. A 1,000-thread
// process on 64 CPUs would need 64,000 (about 86 MB); call Watch early in
// main, while the process has few threads, so that few descriptors are
// taken.
func WithMaxPerfEvents(n int) Option { return func(c *watchConfig) { c.maxPerf = n } }

// WithTraceBuffer bounds the trace the flight recorder and the Watcher's
// parser hold (default 64 MiB each). A burst of scheduling events beyond it
// within a period loses trace generations, whose CPU is counted as
// unattributed (ReasonTraceLost).
func WithTraceBuffer(bytes uint64) Option { return func(c *watchConfig) { c.maxBytes = bytes } }

// Watcher sums the process's CPU time per runtime/trace task type from
// Watch until Close. See the package doc, "Always on".
type Watcher struct {
	eng   *engine
	src   cpuSource
	fr    *trace.FlightRecorder
	feed  *feed
	cfg   watchConfig
	start time.Time
	stop  chan struct{}
	ran   chan struct{} // run has returned
	done  sync.WaitGroup
	once  sync.Once
	snapE atomic.Value // the last snapshot error, a string
}

var current atomic.Pointer[Watcher]

// Watch starts summing the CPU time of the process per task type, with the
// execution tracer's flight recorder (which leaves runtime/trace.Start,
// go test -trace and /debug/pprof/trace to the program) and, on Linux, the
// kernel's context-switch records on the process's threads (or, where the
// kernel refuses them, sampled thread CPU clocks), on Windows the
// threads' GetThreadTimes, sampled (see the package doc). There can be one
// Watcher at a time (ErrWatching); it fails if the program runs a
// FlightRecorder of its own.
func Watch(opts ...Option) (*Watcher, error) {
	cfg := watchConfig{maxTypes: DefaultMaxTypes, period: time.Second, maxBytes: 64 << 20, maxPerf: DefaultMaxPerfEvents}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxTypes < 0 || cfg.period <= 0 || cfg.maxBytes == 0 || cfg.maxPerf <= 0 {
		return nil, fmt.Errorf("goroutines: Watch: max types %d (want 0 or more), period %v, trace buffer %d bytes, max perf events %d (want more than 0)", cfg.maxTypes, cfg.period, cfg.maxBytes, cfg.maxPerf)
	}
	w := &Watcher{eng: newEngine(), cfg: cfg, stop: make(chan struct{}), ran: make(chan struct{})}
	if !current.CompareAndSwap(nil, w) {
		return nil, fmt.Errorf("goroutines: Watch: %w", ErrWatching)
	}
	ok := false
	defer func() {
		if !ok {
			current.CompareAndSwap(w, nil)
		}
	}()
	w.eng.w = newWatchState(cfg.maxTypes)
	w.eng.pairs = nil
	w.eng.maxEvents = cfg.maxPerf
	// The recorder keeps a few periods of trace, so a snapshot taken late
	// still finds the generations since the last one.
	w.fr = trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 3 * cfg.period, MaxBytes: cfg.maxBytes})
	if err := w.fr.Start(); err != nil {
		return nil, fmt.Errorf("goroutines: Watch: starting the execution tracer's flight recorder: %w", err)
	}
	src, err := openWatchSource(w.eng)
	if err != nil {
		w.fr.Stop()
		return nil, fmt.Errorf("goroutines: Watch: %w", err)
	}
	w.src = src
	w.eng.mu.Lock()
	w.start = time.Now()
	w.eng.winStart = monoNow()
	w.eng.mu.Unlock()
	w.feed = newFeed(int(min(cfg.maxBytes, 1<<40)))
	w.done.Add(1)
	go func() { defer w.done.Done(); w.eng.parse(w.feed) }()
	go w.run()
	ok = true
	return w, nil
}

// run drains the CPU source and takes the trace while the Watcher runs.
func (w *Watcher) run() {
	defer close(w.ran)
	drain := time.NewTicker(w.src.period())
	defer drain.Stop()
	snap := time.NewTicker(w.cfg.period)
	defer snap.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-drain.C:
			w.src.drain(false, 0)
		case <-snap.C:
			w.takeTrace()
		}
	}
}

func (w *Watcher) takeTrace() {
	if err := w.feed.snapshot(w.fr); err != nil {
		w.snapE.Store(err.Error())
	}
}

// Close stops watching and releases the flight recorder and the kernel's
// resources. The counters stay readable (Snapshot) as they were. Calling
// Close again does nothing.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		close(w.stop)
		<-w.ran
		w.takeTrace() // the last generations
		w.feed.close()
		w.done.Wait()
		w.fr.Stop()
		w.src.close()
		current.CompareAndSwap(w, nil)
	})
	return nil
}

// Snapshot is a Watcher's counters: cumulative CPU time since Watch. Every
// instant of a thread's CPU counts once: for the innermost task's type
// (Types, Overflow), for no task (NoTask), for the runtime (Runtime), or as
// unattributed with a reason.
type Snapshot struct {
	// Start is when Watch began; Through is the moment up to which the
	// counters hold the CPU (the trace and the CPU source have both passed
	// it, and sampled thread clocks are shared out up to it): about one
	// period (WithPeriod) behind the call.
	Start, Through time.Time

	// Types lists each task type seen, by name.
	Types []TypeCPU
	// Overflow sums the types past the limit (WithMaxTypes), Type
	// OverflowType; OverflowTypes is how many distinct types it holds
	// (saturating at 65,536: OverflowTypesSaturated).
	Overflow               TypeCPU
	OverflowTypes          int
	OverflowTypesSaturated bool

	// NoTask is the CPU of goroutines outside any task (and in tasks whose
	// begin the trace did not show: begun before Watch, or across a lost
	// stretch of trace).
	NoTask time.Duration
	// Runtime is the CPU of the process's threads while no goroutine held
	// them: the scheduler, the garbage collector's background work, the
	// tracer's own flushing.
	Runtime time.Duration
	// Unattributed is CPU the Watcher could not give to any of the above,
	// by reason (ReasonTraceLost, ReasonUnwatchedThread).
	Unattributed map[string]time.Duration
	// LostGenerations counts trace generations lost; LostRecords, the
	// context-switch records the kernel dropped (exact mode: their
	// threads' CPU is spread over the stretch they left unexplained).
	LostGenerations, LostRecords uint64

	// Exact is true when the CPU comes from the kernel's context-switch
	// records; false: sampled thread CPU clocks (on Windows, always), and
	// Fallback says why.
	Exact    bool
	Fallback string

	// TraceError is the last error taking a snapshot of the flight
	// recorder, if any (what it cost shows in LostGenerations).
	TraceError string
}

// TypeCPU is the CPU of one task type.
type TypeCPU struct {
	Type string
	// CPU is the CPU time of goroutines while it was their innermost task
	// (a nested task's time counts for the nested task's type only).
	CPU time.Duration
	// Ended counts its tasks that ended (task.End) since Watch: per request
	// with Middleware.
	Ended uint64
}

// Snapshot returns the counters now. It takes a lock the parser holds for a
// few hundred events at a time, and copies the types.
func (w *Watcher) Snapshot() Snapshot {
	e := w.eng
	e.mu.Lock()
	ws := e.w
	s := Snapshot{
		Start:                  w.start,
		Types:                  make([]TypeCPU, len(ws.types)),
		Overflow:               TypeCPU{OverflowType, time.Duration(ws.over.cpu), ws.over.ended},
		OverflowTypes:          len(ws.overNames),
		OverflowTypesSaturated: len(ws.overNames) >= maxOverflowNames,
		NoTask:                 time.Duration(ws.noTask),
		Unattributed:           map[string]time.Duration{ReasonTraceLost: time.Duration(ws.lostCPU), ReasonUnwatchedThread: time.Duration(e.uncovered)},
		LostGenerations:        ws.lostGen,
		LostRecords:            e.lost,
	}
	for i, t := range ws.types {
		s.Types[i] = TypeCPU{t.name, time.Duration(t.cpu), t.ended}
	}
	ws.runtime = max(ws.runtime, ws.drop-ws.credited)
	s.Runtime = time.Duration(ws.runtime)
	through := e.through()
	e.mu.Unlock()
	s.Through = time.Now().Add(-time.Duration(monoNow() - through))
	s.Exact = w.src.exact()
	s.Fallback = w.src.approx()
	s.TraceError, _ = w.snapE.Load().(string)
	sort.Slice(s.Types, func(i, j int) bool { return s.Types[i].Type < s.Types[j].Type })
	return s
}

// through is the moment (monoNow) up to which a Watcher's counters hold
// the CPU: both the trace and the CPU source have passed it. e.mu is held.
func (e *engine) through() int64 {
	t := min(e.known, e.traceNow)
	if e.w.open {
		t = e.known // the trace is lost: its CPU is counted as such up to known
	}
	if e.shareByRunning {
		// A sample is shared out once the trace has passed its end (and
		// the preemption gaps in it are resolved): until then its
		// stretch is in no counter.
		for _, th := range e.threads {
			for _, p := range th.pieces {
				if p.occ < 0 {
					t = min(t, p.start)
					break
				}
			}
		}
	}
	return max(t, e.winStart)
}

// Total is the sum of every counter: the process's CPU since Watch, up to
// Through.
func (s Snapshot) Total() time.Duration {
	t := s.Overflow.CPU + s.NoTask + s.Runtime
	for _, x := range s.Types {
		t += x.CPU
	}
	for _, x := range s.Unattributed {
		t += x
	}
	return t
}
