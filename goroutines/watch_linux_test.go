package goroutines

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// lockedTask runs n tasks of type typ, each burning per of its locked
// thread's CPU clock, and returns what the clock counted inside them.
func lockedTasks(typ string, n int, per time.Duration, iters int) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var truth int64
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		_, task := NewTask(context.Background(), typ)
		c0 := ownThreadCPU()
		for c := c0; c-c0 < int64(per); c = ownThreadCPU() {
			x = spin(iters, x)
		}
		truth += ownThreadCPU() - c0
		task.End()
	}
	sink.Add(x)
	return truth
}

// TestWatchTypesAgainstThreadClocks: three task types burn on locked
// threads under OS load; each type's counter is held to the sum of its
// threads' CPU clocks inside the tasks, and every counter together to the
// process CPU clock.
func TestWatchTypesAgainstThreadClocks(t *testing.T) {
	loadMachine(t)
	iters := itersFor(50 * time.Microsecond)
	p0 := processCPU()
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p1 := processCPU()
	truth := map[string]int64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, typ := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := lockedTasks(typ, 40*(i+1), 2*time.Millisecond, iters)
			mu.Lock()
			truth[typ] += c
			mu.Unlock()
		}()
	}
	wg.Wait()
	end := time.Now()
	p2 := processCPU()
	s := waitThrough(t, w, end)
	p3 := processCPU()
	t.Logf("exact %v %s; no task %v, runtime %v, unattributed %v, lost gens %d records %d",
		s.Exact, s.Fallback, s.NoTask, s.Runtime, s.Unattributed, s.LostGenerations, s.LostRecords)
	for i, typ := range []string{"a", "b", "c"} {
		got := typeCPU(s, typ)
		tr := truth[typ]
		t.Logf("%s: %v over %d tasks, its threads' clocks %v", typ, got.CPU, got.Ended, time.Duration(tr))
		if got.Ended != uint64(40*(i+1)) {
			t.Errorf("%s: %d tasks ended, want %d", typ, got.Ended, 40*(i+1))
		}
		lo, hi := 0.97*float64(tr)-1e6, 1.03*float64(tr)+float64(got.Ended)*50e3+1e6
		if float64(got.CPU) < lo || float64(got.CPU) > hi {
			t.Errorf("%s: %v, its threads' clocks %v (allowed %v..%v)", typ, got.CPU, time.Duration(tr), time.Duration(lo), time.Duration(hi))
		}
	}
	// Every counter together is the process's CPU from Watch to Through:
	// more than the clock's growth while the tasks ran, less than its
	// growth from before Watch to after the snapshot.
	total := s.Total()
	t.Logf("all counters %v; process CPU clock %v inner, %v outer", total, time.Duration(p2-p1), time.Duration(p3-p0))
	if int64(total) > p3-p0+2e6 {
		t.Errorf("the counters add up to %v, more than the process CPU clock's %v", total, time.Duration(p3-p0))
	}
	if float64(total) < 0.97*float64(p2-p1)-2e6 {
		t.Errorf("the counters add up to %v, under 97 %% of the process CPU clock's %v", total, time.Duration(p2-p1))
	}
	if s.Unattributed[ReasonTraceLost] != 0 || s.LostGenerations != 0 {
		t.Errorf("lost trace: %v in %d generations", s.Unattributed[ReasonTraceLost], s.LostGenerations)
	}
}

// TestWatchLeavesTraceStart: runtime/trace.Start succeeds while a Watcher
// runs, and its trace parses and shows the tasks begun during it.
func TestWatchLeavesTraceStart(t *testing.T) {
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatalf("trace.Start while watching: %v", err)
	}
	_, task := trace.NewTask(context.Background(), "during-trace")
	sink.Add(spin(100000, 3))
	task.End()
	trace.Stop()
	rd, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for {
		ev, err := rd.ReadEvent()
		if err != nil {
			break
		}
		if ev.Kind() == xtrace.EventTaskBegin && ev.Task().Type == "during-trace" {
			seen = true
		}
	}
	if !seen {
		t.Errorf("the trace trace.Start took while watching (%d bytes) has no task during-trace", buf.Len())
	}
	// and the Watcher saw it too
	s := waitThrough(t, w, time.Now())
	if typeCPU(s, "during-trace").Ended != 1 {
		t.Errorf("the Watcher counted %d ends of task during-trace, want 1", typeCPU(s, "during-trace").Ended)
	}
}

// TestWatchBesideRecording: a one-off recording (Start..Stop) works while a
// Watcher runs, and a second Watcher is refused.
func TestWatchBesideRecording(t *testing.T) {
	w, err := Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := Watch(); !errors.Is(err, ErrWatching) {
		t.Errorf("a second Watch: %v, want ErrWatching", err)
	}
	rec, err := Start()
	if err != nil {
		t.Fatalf("Start while watching: %v", err)
	}
	wl := runWorkload(50*time.Millisecond, 5*time.Millisecond, false)
	p, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := byID(p, wl.lockedID)
	if !ok || float64(g.CPU) < 0.9*float64(wl.lockedTruth) {
		t.Errorf("the recording's locked goroutine: %v (found %v), its thread clock %v", g.CPU, ok, time.Duration(wl.lockedTruth))
	}
}
