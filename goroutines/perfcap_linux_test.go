package goroutines

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// perfFDs counts the process's open perf event descriptors, from
// /proc/self/fd's link targets.
func perfFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestWatchPerfCapAtStart: a process with more threads × CPUs than
// WithMaxPerfEvents allows is watched from sampled clocks from the start,
// holds no perf descriptor, and says why.
func TestWatchPerfCapAtStart(t *testing.T) {
	before := perfFDs(t)
	w, err := Watch(WithMaxPerfEvents(1), WithPeriod(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := perfFDs(t); n != before {
		t.Errorf("%d perf descriptors open while watching past the cap, %d before", n, before)
	}
	truth := lockedTasks("capped", 20, 2*time.Millisecond, itersFor(50*time.Microsecond))
	s := waitThrough(t, w, time.Now())
	got := typeCPU(s, "capped").CPU
	t.Logf("exact %v (%s); %v, thread clocks %v", s.Exact, s.Fallback, got, time.Duration(truth))
	if s.Exact || !strings.Contains(s.Fallback, "the cap is 1") {
		t.Errorf("Exact %v, Fallback %q: want the cap named", s.Exact, s.Fallback)
	}
	checkSampled(t, "sampled", got, truth)
}

// TestWatchPerfCapAsThreadsGrow: a Watcher whose cap has room for the
// process's threads at Watch and no more moves to sampled clocks once the
// process starts more (locked goroutines, one more than there are
// threads, force new ones): its perf
// descriptors close, Snapshot says so, and the counters still add up to
// the process CPU clock, the records' part and the samples' part together.
func TestWatchPerfCapAsThreadsGrow(t *testing.T) {
	before := perfFDs(t)
	tids, err := ownThreads()
	if err != nil {
		t.Fatal(err)
	}
	p0 := processCPU()
	w, err := Watch(WithMaxPerfEvents(len(tids)*runtime.NumCPU()+runtime.NumCPU()), WithPeriod(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p1 := processCPU()
	if n := perfFDs(t); n == before {
		t.Fatalf("no perf descriptor open while watching within the cap (Exact %v: %s)", w.Snapshot().Exact, w.Snapshot().Fallback)
	}
	iters := itersFor(50 * time.Microsecond)
	var truth int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	hold := make(chan struct{})
	// More locked goroutines at once than the process has threads: each
	// holds a thread of its own while it waits, so new threads come.
	for i := 0; i < len(tids)+2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c := lockedTasks("grown", 10, 2*time.Millisecond, iters)
			<-hold
			c += lockedTasks("grown", 10, 2*time.Millisecond, iters)
			mu.Lock()
			truth += c
			mu.Unlock()
		}()
	}
	deadline := time.Now().Add(20 * time.Second)
	for w.Snapshot().Exact && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(hold)
	wg.Wait()
	end := time.Now()
	p2 := processCPU()
	s := waitThrough(t, w, end)
	p3 := processCPU()
	got := typeCPU(s, "grown").CPU
	t.Logf("exact %v (%s); %v, thread clocks %v; total %v, process %v..%v", s.Exact, s.Fallback, got, time.Duration(truth), s.Total(), time.Duration(p2-p1), time.Duration(p3-p0))
	if s.Exact || !strings.Contains(s.Fallback, "context-switch records stopped") {
		t.Fatalf("Exact %v, Fallback %q: want the move to sampled clocks", s.Exact, s.Fallback)
	}
	if n := perfFDs(t); n != before {
		t.Errorf("%d perf descriptors still open after the move to sampled clocks, %d before Watch", n, before)
	}
	checkSampled(t, "grown", got, truth)
	checkSampledTotal(t, s, p0, p1, p2, p3)
}
