// Package goroutines measures the CPU time of each goroutine and of each
// runtime/trace task of the calling program, from a stock Go runtime.
//
// Go's execution tracer knows when each goroutine ran on which OS thread,
// but not how much CPU the thread got while it did: a thread the OS
// preempts keeps its goroutine "running". The kernel knows each thread's CPU
// time, but not which goroutine used it. A recording (Start .. Stop) joins
// the two on one clock (CLOCK_MONOTONIC on Linux, which the trace's clock
// snapshots pair with the tracer's time; QueryPerformanceCounter on
// Windows) and by thread ID: the tracer's are the OS thread IDs (Linux
// tids, Windows thread ids).
//
// # What is counted
//
// A goroutine's CPU is the user and kernel time of its thread while the
// goroutine held it: running Go code, or blocked in a system call (which
// holds the thread). A task's CPU is that of the goroutines while they ran
// inside it: between its begin and end on the goroutine that created it,
// and inside its regions (trace.WithRegion with the task's context) on
// other goroutines; a child task's CPU counts in its parents too. Work of
// the runtime with no goroutine on the thread (the scheduler, parts of the
// GC) is Profile.Runtime, so goroutines plus Runtime add up to the CPU the
// process's threads got.
//
// # Linux, exact mode
//
// Start opens, for every thread of the process and every CPU, a software
// dummy perf event (perf_event_open) that records context switches
// (PERF_RECORD_SWITCH, stamped with CLOCK_MONOTONIC), inherited by the
// threads those threads create, one ring buffer per CPU; it needs no
// privilege (perf_event_paranoid 2 allows events on the own process) and
// threads × CPUs file descriptors. Events past DefaultMaxPerfEvents
// (threads × CPUs, the threads created since included), or descriptors past
// a quarter of RLIMIT_NOFILE, move it to the fallback, saying when and why.
// The records give each thread's on-CPU
// intervals; every 20 ms the thread's CPU clock says how much CPU those
// intervals held (less than their wall time by the hypervisor's steal time,
// and interrupt time where the kernel accounts it; a little more for a
// thread that switches every few microseconds), and the intervals are
// scaled to it. Intersected with the tracer's
// intervals in which a goroutine held the thread, they give each
// goroutine's CPU: each thread's total is its CPU clock's, and within a
// 20 ms stretch CPU goes to the goroutines by their on-CPU time.
//
// A goroutine that the scheduler preempts and then resumes on the same
// thread, with no other goroutine on the thread in between, is also
// charged the thread's CPU in between: for a goroutine locked to its
// thread (runtime.LockOSThread) that is the runtime handing the thread
// off and back, and the goroutine's CPU then equals what its thread's CPU
// clock shows.
//
// # Linux, fallback
//
// Where the kernel refuses perf events (perf_event_paranoid 3, seccomp
// filters, containers without perf), each thread's CPU clock is sampled
// every 2 ms and its growth shared among the goroutines that ran on the
// thread in proportion to their running time. Profile.Exact is false and
// Profile.Problems says so: a goroutine's figure is an estimate, good over
// many samples, coarse for one short goroutine.
//
// # Streaming, one trace at a time
//
// The trace is parsed while the runtime writes it, a generation (about a
// second) at a time, and CPU is credited as both streams pass: memory grows
// with the live goroutines and threads, the generation being parsed, and a
// few hundred bytes per goroutine and task the Profile lists. Parsing costs
// CPU per scheduling event (docs/figures.md): noticeable for goroutines
// that trade on channels, negligible for goroutines that compute. The
// runtime allows one execution trace at a time; Start fails with
// ErrTraceActive while another runs (go test -trace, net/http/pprof's
// /debug/pprof/trace, runtime/trace.Start), and other tracing fails while a
// recording runs.
//
// # Always on
//
// Watch sums the process's CPU per task type for the program's whole life,
// for metrics (package promgoroutines exports them to Prometheus):
//
//	w, err := goroutines.Watch()
//	...
//	http.ListenAndServe(addr, goroutines.Middleware(mux)) // a task per request, typed by its route
//
// It reads the execution trace through runtime/trace's FlightRecorder,
// which runs beside trace.Start: go test -trace, /debug/pprof/trace and
// one-off recordings (Start) keep working. Once a period (WithPeriod, 1 s)
// it takes a snapshot, which ends a trace generation, and passes each
// generation it has not seen, by the generation number in its batches'
// headers, to one parser: the snapshots overlap, and each generation is
// parsed once. A generation the recorder dropped before a snapshot took it
// ends the parsed stream there; the CPU of the stretch until the next
// stream is unattributed (ReasonTraceLost), never absent.
//
// Each instant of a thread's CPU counts once: for the type of the
// innermost task of the goroutine holding the thread (a child task's time
// counts for the child's type, not its parent's), for no task, for the
// runtime (no goroutine on the thread), or as unattributed. Together the
// counters are the process's CPU since Watch, up to Snapshot.Through,
// about a period ago (the tests hold them to the process CPU clock: at
// least 97 % of it less 2 ms, at most all of it plus 2 ms). State lives only as long as what it describes: a
// goroutine's until it exits, a task's until it ends (a task never ended
// is kept), a thread's until it exits; types past WithMaxTypes (200) count
// as one, OverflowType. TaskCPU reads a live task's CPU so far, as stale as
// the period. The CPU sources are the recording's: perf context-switch
// records (drained every 100 ms), else thread CPU clocks sampled every
// 10 ms (Snapshot.Exact, Snapshot.Fallback). Watching costs the kernel
// about 1.8 µs at each context switch of the process's threads, and the
// tracer and the parser (130 ns) each scheduling event: 3.5 % of the CPU
// per request of a net/http server that switches 15 times a request
// (BenchmarkServeCost, docs/goroutines.md).
//
// # Windows
//
// Windows has no per-thread context-switch records a process can ask for
// about itself, so Start and Watch always use the sampled fallback:
// each thread of the process (listed from the system's process snapshot
// every round) is opened once with THREAD_QUERY_LIMITED_INFORMATION and
// its GetThreadTimes, kernel plus user, read every 16 ms (a Watcher: every
// 100 ms); each sample's growth goes to the goroutines that held the thread
// within it, by running time. The handle is kept until the thread has
// ended, so its id is never another thread's meanwhile and its last times
// are read after it ends. The samples are stamped with
// QueryPerformanceCounter. The trace's clock snapshots pair the tracer's
// time with the runtime's nanotime, which on Windows advances a clock
// interrupt at a time (the interrupt time of KUSER_SHARED_DATA); so each
// round the sampler also writes a sync event into the trace (trace.Log,
// category "github.com/cputime/cputime/goroutines.sync", which a program's
// own trace shows too) between two counter readings, and the engine maps
// the trace onto the counter's time from those.
// Profile.Exact and Snapshot.Exact are false, and Problems and Fallback say
// why and how coarse the figures are.
//
// Windows advances a thread's times only at the clock interrupt, a whole
// interval (15.6 ms unless a program raised the timer's rate) to the
// thread the interrupt finds running: a sample's growth is a count of
// quanta, one more or less than the thread ran in it. It is therefore
// shared out whole, not capped at the goroutines' running time as on
// Linux, so that over many samples the goroutines on a thread get its
// times: a goroutine's figure is good to about a quantum per sample it ran
// in, coarse for one that ran under a few quanta (1 ms of CPU may read as
// 0 or 15.6 ms), and the runtime's work between goroutines counts as
// theirs. QueryThreadCycleTime counts a thread's CPU to the cycle, and
// cycles become time at the reference frequency (as cputime.Measure
// converts them), or at the process's cycles per GetProcessTimes
// nanosecond, a ratio made of the same quanta and so good only over many
// of them. The sampler does not use it: Wine lacks the call, so the tests
// could not check that path.
//
// # Other systems
//
// macOS and the other systems are not supported: Start and Watch return an
// error wrapping ErrNotSupported there.
package goroutines
