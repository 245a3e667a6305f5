package goroutines

import (
	"errors"
	"fmt"
	"io"
	"runtime/trace"
	"sort"
	"sync"
	"time"

	"github.com/cputime/cputime"
)

// ErrTraceActive: another execution trace (runtime/trace.Start, a
// net/http/pprof trace, go test -trace) is running. The runtime allows one,
// and a recording needs it. Start wraps it together with the runtime's own
// error.
var ErrTraceActive = errors.New("another execution trace is active")

// ErrNotSupported is the root package's sentinel: this platform cannot
// record goroutine CPU time (yet). See the package doc.
var ErrNotSupported = cputime.ErrNotSupported

// Profile is what a recording found between Start and End.
type Profile struct {
	// Start and End bound the recording, read inside Start and inside Stop.
	Start, End time.Time

	// Goroutines lists every goroutine that ran (held a thread, in Go code or
	// in a system call) between Start and End, most CPU first.
	Goroutines []Goroutine

	// Tasks lists every runtime/trace task that began, ended or ran between
	// Start and End, by ID.
	Tasks []Task

	// Threads lists each OS thread of the process that got CPU in the window,
	// most CPU first: its CPU time in the window, and how much of it went to
	// goroutines.
	Threads []Thread

	// Runtime is the CPU time of the process's threads while no goroutine
	// held them: the scheduler looking for work, GC workers' bookkeeping
	// between goroutines, the tracer's own flushing. Goroutines plus Runtime
	// is the CPU the threads got in the window.
	Runtime time.Duration

	// Exact is true when the figures come from the kernel's context-switch
	// records (each thread's on-CPU intervals, intersected with each
	// goroutine's running intervals). False: the fallback, thread CPU clocks
	// sampled every few milliseconds, their growth shared among the
	// goroutines that ran on the thread by running time (always on
	// Windows: its GetThreadTimes); Problems says why.
	Exact bool

	// Complete is true when Problems is empty: every figure is what its mode
	// promises.
	Complete bool

	// Problems are sentences, with counts, saying where and why the figures
	// are not exact (DESIGN §8). Empty means exact.
	Problems []string

	pairs    map[pairKey]int64 // CPU per (goroutine, innermost task), for WritePprof
	fn       map[uint64]string
	taskType map[uint64]string
}

// Goroutine is the CPU time one goroutine got between Start and End.
type Goroutine struct {
	// ID is the runtime's goroutine id (the one runtime.Stack prints).
	ID uint64
	// Function is the goroutine's start function, e.g. "main.worker"; for a
	// goroutine that existed before Start and whose start the recording
	// could not see, "unknown (started before the recording)".
	Function string
	// CPU is the user and kernel time of its thread while the goroutine held
	// it (running Go code or in a system call), in nanoseconds.
	CPU time.Duration
}

// Task is the CPU time of a runtime/trace task: the CPU of the goroutines
// while they ran inside it (between its begin and end on the goroutine that
// created it, and inside its regions on other goroutines), its child tasks
// included.
type Task struct {
	ID     uint64
	Parent uint64 // 0: none, or a task the recording did not see begin
	// Type is the taskType given to trace.NewTask; "" for a task that began
	// before Start.
	Type string
	CPU  time.Duration
}

// Thread is one OS thread's CPU time in the window.
type Thread struct {
	TID        int64         // the OS thread id (Linux tid, Windows thread id)
	CPU        time.Duration // its CPU time between Start and End
	Goroutines time.Duration // the part of CPU spent while a goroutine held it
}

// Recorder is a recording in progress. It holds the execution tracer, and
// on Linux perf file descriptors and ring buffers (on Windows, a handle
// per thread), until Stop ends it; a
// Recorder is not reusable.
type Recorder struct {
	eng       *engine
	src       cpuSource
	pw        *io.PipeWriter
	traceDone chan error // the trace reader's end
	stopTick  chan struct{}
	tickDone  chan struct{}
	startWall time.Time
	stopOnce  sync.Once
	prof      *Profile
	err       error
}

// Start starts the execution tracer and the kernel's CPU sources for this
// process. Only one recording (indeed one execution trace) can run at a
// time: if another is active, the error wraps ErrTraceActive and the
// runtime's error.
func Start() (*Recorder, error) {
	eng := newEngine()
	r := &Recorder{eng: eng, traceDone: make(chan error, 1), stopTick: make(chan struct{}), tickDone: make(chan struct{})}
	pr, pw := io.Pipe()
	r.pw = pw
	go func() { r.traceDone <- eng.readTrace(pr) }()
	// The tracer first: it is the one that can be taken. (trace.IsEnabled
	// is no test: it is also true while a flight recorder runs, which does
	// not stop trace.Start.)
	if err := trace.Start(pw); err != nil {
		pw.Close()
		<-r.traceDone
		return nil, fmt.Errorf("goroutines: starting the execution tracer: %w: %w", ErrTraceActive, err)
	}
	src, err := openSource(eng)
	if err != nil {
		trace.Stop()
		pw.Close()
		<-r.traceDone
		return nil, fmt.Errorf("goroutines: %w", err)
	}
	r.src = src
	// The window opens once every thread is watched: the trace's first
	// moments, before that, are not counted.
	eng.mu.Lock()
	r.startWall = time.Now()
	eng.winStart = monoNow()
	eng.mu.Unlock()
	names := stackNames() // goroutines that existed before Start: the trace names the others
	eng.mu.Lock()
	eng.names = names
	eng.mu.Unlock()
	go r.tick()
	return r, nil
}

// tick feeds the CPU source's data to the engine while the recording runs.
func (r *Recorder) tick() {
	defer close(r.tickDone)
	t := time.NewTicker(r.src.period())
	defer t.Stop()
	for {
		select {
		case <-r.stopTick:
			return
		case <-t.C:
			r.src.drain(false, 0)
		}
	}
}

// Stop ends the recording and returns its Profile. The error, if any, says
// why there is no Profile; a Profile whose figures are incomplete says so
// in Problems. Calling Stop again returns the same results.
func (r *Recorder) Stop() (*Profile, error) {
	r.stopOnce.Do(func() { r.prof, r.err = r.stop() })
	return r.prof, r.err
}

func (r *Recorder) stop() (*Profile, error) {
	end := monoNow()
	endWall := time.Now()
	trace.Stop() // returns once the runtime has written all of the trace
	r.pw.Close()
	close(r.stopTick)
	<-r.tickDone
	r.src.drain(true, end)
	r.src.close()
	traceErr := <-r.traceDone
	p := r.eng.finish(end, traceErr)
	p.Start, p.End = r.startWall, endWall
	p.Exact = r.src.exact()
	if why := r.src.approx(); why != "" {
		p.Problems = append([]string{why}, p.Problems...)
	}
	p.Complete = len(p.Problems) == 0
	return p, nil
}

func sortProfile(p *Profile) {
	sort.Slice(p.Goroutines, func(i, j int) bool {
		a, b := p.Goroutines[i], p.Goroutines[j]
		if a.CPU != b.CPU {
			return a.CPU > b.CPU
		}
		return a.ID < b.ID
	})
	sort.Slice(p.Tasks, func(i, j int) bool { return p.Tasks[i].ID < p.Tasks[j].ID })
	sort.Slice(p.Threads, func(i, j int) bool {
		a, b := p.Threads[i], p.Threads[j]
		if a.CPU != b.CPU {
			return a.CPU > b.CPU
		}
		return a.TID < b.TID
	})
}
