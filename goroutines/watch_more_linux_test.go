package goroutines

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TestWatchMemoryBounded: hours of traffic in miniature. Rounds of many
// short goroutines, each in a task of one of a few types, leave the
// Watcher's state (goroutines, tasks, thread stretches), the heap and the
// open file descriptors (/proc/self/fd) where the first rounds left them.
func TestWatchMemoryBounded(t *testing.T) {
	w, err := Watch(WithPeriod(200 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	round := func() {
		var wg sync.WaitGroup
		for i := 0; i < 2000; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, task := trace.NewTask(context.Background(), []string{"a", "b", "c"}[i%3])
				sink.Add(spin(200, uint64(i)))
				task.End()
			}()
		}
		wg.Wait()
		time.Sleep(20 * time.Millisecond) // a steady rate: the recorder's window holds the same trace throughout
	}
	state := func() (gors, tasks, pieces int, heap uint64) {
		waitThrough(t, w, time.Now())
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		e := w.eng
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, th := range e.threads {
			pieces += len(th.pieces) + len(th.segs)
		}
		return len(e.gors), len(e.tasks), pieces, ms.HeapAlloc
	}
	// The flight recorder keeps about a second of trace on the heap: the
	// first rounds fill it.
	rounds := 0
	for t0 := time.Now(); time.Since(t0) < 1500*time.Millisecond && rounds < 200; rounds++ {
		round()
	}
	g0, k0, p0, h0 := state()
	fd0, perf0 := openFDs(t), perfFDs(t)
	r0 := rounds
	for t0 := time.Now(); time.Since(t0) < 4*time.Second && rounds < r0+400; rounds++ {
		round()
	}
	g1, k1, p1, h1 := state()
	fd1, perf1 := openFDs(t), perfFDs(t)
	if perf1 != perf0 || fd1 > fd0+4 {
		t.Errorf("open file descriptors went from %d (%d perf events) to %d (%d)", fd0, perf0, fd1, perf1)
	}
	s := w.Snapshot()
	ended := typeCPU(s, "a").Ended + typeCPU(s, "b").Ended + typeCPU(s, "c").Ended
	t.Logf("after %d rounds: %d goroutines, %d tasks, %d stretches, heap %d KiB; after %d: %d, %d, %d, %d KiB; tasks ended %d",
		r0, g0, k0, p0, h0>>10, rounds, g1, k1, p1, h1>>10, ended)
	if g1 > 200 || k1 > 50 {
		t.Errorf("the Watcher holds %d goroutines and %d tasks after %d short ones ended", g1, k1, ended)
	}
	if p1 > 20000 {
		t.Errorf("the Watcher holds %d thread stretches", p1)
	}
	// 20 bytes kept per task would be 6 MB over 300,000.
	if more := 2000 * (rounds - r0); h1 > h0+uint64(more)*20 {
		t.Errorf("the heap grew from %d KiB to %d KiB over %d more tasks", h0>>10, h1>>10, more)
	}
	if ended != uint64(2000*rounds) {
		t.Errorf("%d tasks counted as ended, want %d", ended, 2000*rounds)
	}
}

// TestTaskCPUStaleness: TaskCPU of a live task trails the task's own
// thread CPU clock by at most the CPU of two periods (the Watcher
// takes the trace once a period, and parsing it takes a little more: two
// periods leave room for a loaded machine and the race detector).
func TestTaskCPUStaleness(t *testing.T) {
	const period = 250 * time.Millisecond
	w, err := Watch(WithPeriod(period))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := TaskCPU(context.Background()); ok {
		t.Error("TaskCPU of a context without a task says ok")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, task := NewTask(context.Background(), "control-loop")
	c0 := ownThreadCPU()
	iters := itersFor(time.Millisecond)
	worst, n := time.Duration(0), 0
	for t0 := time.Now(); time.Since(t0) < 3*time.Second; {
		sink.Add(spin(iters, 5))
		got, ok := TaskCPU(ctx)
		truth := time.Duration(ownThreadCPU() - c0)
		if !ok {
			t.Fatal("TaskCPU of a live task: not ok")
		}
		if got > truth+time.Millisecond {
			t.Fatalf("TaskCPU %v, more than the task's thread clock %v", got, truth)
		}
		if time.Since(t0) > 2*period {
			worst = max(worst, truth-got)
			n++
		}
	}
	task.End()
	t.Logf("over %d reads, TaskCPU trailed the thread clock by at most %v (period %v)", n, worst, period)
	if worst > 2*period {
		t.Errorf("TaskCPU trailed the thread CPU clock by %v, more than 2 periods (%v)", worst, 2*period)
	}
	s := waitThrough(t, w, time.Now())
	if _, ok := TaskCPU(ctx); ok || typeCPU(s, "control-loop").Ended != 1 {
		t.Errorf("after End: TaskCPU ok %v, ended %d", ok, typeCPU(s, "control-loop").Ended)
	}
}

// TestWatchFallbackSaysSo: with perf refused, a Watcher samples thread
// clocks, says so, and its counters still add up to the process CPU clock.
func TestWatchFallbackSaysSo(t *testing.T) {
	if !refusePerf(t) {
		return
	}
	p0 := processCPU()
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p1 := processCPU()
	iters := itersFor(50 * time.Microsecond)
	truth := lockedTasks("fallback", 50, 4*time.Millisecond, iters)
	end := time.Now()
	p2 := processCPU()
	s := waitThrough(t, w, end)
	p3 := processCPU()
	got := typeCPU(s, "fallback").CPU
	t.Logf("exact %v (%s); fallback %v, thread clocks %v; total %v, process %v..%v", s.Exact, s.Fallback, got, time.Duration(truth), s.Total(), time.Duration(p2-p1), time.Duration(p3-p0))
	if s.Exact || !strings.Contains(s.Fallback, "permission denied") {
		t.Errorf("Exact %v, Fallback %q: want the refusal", s.Exact, s.Fallback)
	}
	checkSampled(t, "fallback", got, truth)
	checkSampledTotal(t, s, p0, p1, p2, p3)
}

// checkSampled holds a type's CPU from sampled clocks to its threads'
// own clocks: within 20 % (and 5 ms), an estimate's bound.
func checkSampled(t *testing.T, what string, got time.Duration, truth int64) {
	t.Helper()
	if float64(got) < 0.8*float64(truth) || float64(got) > 1.2*float64(truth)+5e6 {
		t.Errorf("%s: %v, the thread clocks %v", what, got, time.Duration(truth))
	}
}

// checkSampledTotal holds every counter together to the process CPU
// clock: at most its growth from before Watch (p0) to after the snapshot
// (p3), plus 2 ms; at least 95 % of its growth from after Watch (p1) to
// the work's end (p2), less 2 ms.
func checkSampledTotal(t *testing.T, s Snapshot, p0, p1, p2, p3 int64) {
	t.Helper()
	if int64(s.Total()) > p3-p0+2e6 || float64(s.Total()) < 0.95*float64(p2-p1)-2e6 {
		t.Errorf("the counters add up to %v; the process CPU clock grew %v inside, %v outside", s.Total(), time.Duration(p2-p1), time.Duration(p3-p0))
	}
}

// TestFeedStitchesSnapshots: overlapping flight-recorder snapshots, passed
// through the feed, make one trace that x/exp/trace reads to its end with
// each generation once (a doubled or missing one breaks its ordering).
func TestFeedStitchesSnapshots(t *testing.T) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: time.Minute})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	defer fr.Stop()
	f := newFeed(64 << 20)
	for i := 0; i < 4; i++ {
		_, task := trace.NewTask(context.Background(), "stitch")
		sink.Add(spin(10000, 1))
		task.End()
		if err := f.snapshot(fr); err != nil {
			t.Fatal(err)
		}
	}
	var stream bytes.Buffer
	for _, c := range f.items {
		if c.eos {
			t.Fatalf("the feed ended a stream (lost %d generations) with nothing lost", c.lost)
		}
		stream.Write(c.b)
	}
	syncs, tasks := readAll(t, &stream)
	if syncs < 4 || tasks != 4 {
		t.Errorf("the stitched trace has %d generations and %d ends of task stitch; want at least 4 and 4", syncs, tasks)
	}
}

// TestFeedLostGeneration: a generation the recorder let go before a
// snapshot took it ends the stream there; the next starts with the header,
// and both parse.
func TestFeedLostGeneration(t *testing.T) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: time.Nanosecond, MaxBytes: 1})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	defer fr.Stop()
	f := newFeed(64 << 20)
	if err := f.snapshot(fr); err != nil {
		t.Fatal(err)
	}
	fr.WriteTo(io.Discard) // a generation the feed never sees
	fr.WriteTo(io.Discard)
	if err := f.snapshot(fr); err != nil {
		t.Fatal(err)
	}
	var streams []*bytes.Buffer
	var lost uint64
	cur := new(bytes.Buffer)
	for _, c := range f.items {
		if c.eos {
			streams, cur, lost = append(streams, cur), new(bytes.Buffer), c.lost
			continue
		}
		cur.Write(c.b)
	}
	streams = append(streams, cur)
	if len(streams) != 2 || lost < 1 {
		t.Fatalf("%d streams, %d generations lost: want 2 streams and at least 1 lost", len(streams), lost)
	}
	for _, s := range streams {
		readAll(t, s)
	}
}

func readAll(t *testing.T, r io.Reader) (syncs, ends int) {
	t.Helper()
	rd, err := xtrace.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := rd.ReadEvent()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("reading the stitched trace: %v", err)
		}
		switch ev.Kind() {
		case xtrace.EventSync:
			syncs++
		case xtrace.EventTaskEnd:
			if ev.Task().Type == "stitch" {
				ends++
			}
		}
	}
}

// TestMiddlewareTypes: each request runs in a task typed by its mux
// pattern, or "unmatched"; the task is in the handler's context.
func TestMiddlewareTypes(t *testing.T) {
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mux := http.NewServeMux()
	var inTask bool
	mux.HandleFunc("GET /items/{id}", func(rw http.ResponseWriter, r *http.Request) {
		_, inTask = TaskCPU(r.Context())
	})
	srv := httptest.NewServer(Middleware(mux))
	defer srv.Close()
	for _, p := range []string{"/items/1", "/items/2", "/nothing"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !inTask {
		t.Error("TaskCPU inside the handler: not ok")
	}
	s := waitThrough(t, w, time.Now())
	if n := typeCPU(s, "GET /items/{id}").Ended; n != 2 {
		t.Errorf("%d requests of GET /items/{id}, want 2 (types %+v)", n, s.Types)
	}
	if n := typeCPU(s, UnmatchedType).Ended; n != 1 {
		t.Errorf("%d unmatched requests, want 1", n)
	}
}

// TestWatchNestedTasks: CPU counts for the innermost task's type only;
// TaskCPU of the outer task includes its child's.
func TestWatchNestedTasks(t *testing.T) {
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	iters := itersFor(100 * time.Microsecond)
	burn := func(d time.Duration) int64 {
		c0 := ownThreadCPU()
		for ownThreadCPU()-c0 < int64(d) {
			sink.Add(spin(iters, 9))
		}
		return ownThreadCPU() - c0
	}
	ctx, outer := NewTask(context.Background(), "outer")
	a := burn(60 * time.Millisecond)
	ictx, inner := NewTask(ctx, "inner")
	b := burn(120 * time.Millisecond)
	waitThrough(t, w, time.Now())
	innerSoFar, _ := TaskCPU(ictx)
	outerSoFar, _ := TaskCPU(ctx)
	inner.End()
	a += burn(60 * time.Millisecond)
	outer.End()
	s := waitThrough(t, w, time.Now())
	o, i := typeCPU(s, "outer").CPU, typeCPU(s, "inner").CPU
	t.Logf("outer %v (its own thread time %v), inner %v (%v); TaskCPU mid-way: outer %v, inner %v", o, time.Duration(a), i, time.Duration(b), outerSoFar, innerSoFar)
	within := func(got time.Duration, want int64) bool {
		return float64(got) >= 0.97*float64(want)-1e6 && float64(got) <= 1.03*float64(want)+2e6
	}
	if !within(o, a) || !within(i, b) {
		t.Errorf("outer %v, want its own %v; inner %v, want %v", o, time.Duration(a), i, time.Duration(b))
	}
	if outerSoFar < innerSoFar+50*time.Millisecond {
		t.Errorf("TaskCPU mid-way: outer %v does not include inner %v and its own 60 ms", outerSoFar, innerSoFar)
	}
}

// TestWatchLostTraceCounted: a Watcher whose parser can take no trace (a
// buffer smaller than any generation) loses every generation; their CPU
// is unattributed, trace_lost, and the counters still add up to the
// process CPU clock.
func TestWatchLostTraceCounted(t *testing.T) {
	p0 := processCPU()
	w, err := Watch(WithTraceBuffer(1024), WithPeriod(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p1 := processCPU()
	lockedTasks("lost", 50, 4*time.Millisecond, itersFor(50*time.Microsecond))
	time.Sleep(300 * time.Millisecond) // snapshots to lose
	end := time.Now()
	p2 := processCPU()
	s := waitThrough(t, w, end)
	p3 := processCPU()
	lost := s.Unattributed[ReasonTraceLost]
	t.Logf("lost %v in %d generations; total %v; process %v..%v; types %+v", lost, s.LostGenerations, s.Total(), time.Duration(p2-p1), time.Duration(p3-p0), s.Types)
	if s.LostGenerations == 0 || len(s.Types) != 0 {
		t.Errorf("%d generations lost, types %+v: want some lost and no types seen", s.LostGenerations, s.Types)
	}
	if float64(lost) < 0.9*float64(p2-p1)-2e6 || int64(s.Total()) > p3-p0+2e6 {
		t.Errorf("trace_lost %v, total %v; the process CPU clock grew %v inside, %v outside", lost, s.Total(), time.Duration(p2-p1), time.Duration(p3-p0))
	}
}
