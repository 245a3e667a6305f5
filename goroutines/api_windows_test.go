package goroutines

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/winapi"
)

// quantum is how far Windows advances a thread's GetThreadTimes at a time:
// the clock interrupt's interval, 15.625 ms by default (Wine reads Linux's
// /proc times, in 10 ms steps).
const quantum = int64(15625 * time.Microsecond)

const windowsReason = "Windows has no per-thread context-switch records for a process"

func filetimeNs(ft windows.Filetime) int64 {
	return (int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime)) * 100
}

// ownThreadTimes is the calling thread's kernel plus user time, as
// GetThreadTimes gives it on the thread's own pseudo-handle: the system's
// figure, read apart from the sampler's handles.
func ownThreadTimes() int64 {
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(windows.CurrentThread(), &c, &e, &k, &u); err != nil {
		panic(err)
	}
	return filetimeNs(k) + filetimeNs(u)
}

func processTimes() int64 {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		panic(err)
	}
	return filetimeNs(k) + filetimeNs(u)
}

// burned is what a locked goroutine did: its id, its thread's id as
// Windows gives it, and its thread's GetThreadTimes growth while it
// burned.
type burned struct {
	id    uint64
	tid   int64
	truth int64
}

// burnLocked burns burn of its locked thread's times (at most 20 s of
// wall time, for a system whose thread times do not advance), with
// typ's tasks of per each if typ is not "".
func burnLocked(burn time.Duration, typ string, per time.Duration) burned {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread() // the thread lives on: an ended thread's times are lost under Wine
	b := burned{id: goid(), tid: int64(windows.GetCurrentThreadId())}
	deadline := time.Now().Add(20 * time.Second)
	x := uint64(88172645463325252)
	c0 := ownThreadTimes()
	c := c0
	for c-c0 < int64(burn) && time.Now().Before(deadline) {
		var task interface{ End() }
		if typ != "" {
			_, task = NewTask(context.Background(), typ)
		}
		for t0 := c; c-t0 < int64(per) && time.Now().Before(deadline); c = ownThreadTimes() {
			x = spin(20000, x)
		}
		if task != nil {
			task.End()
		}
	}
	sink.Add(x)
	b.truth = c - c0
	return b
}

func burnAll(n int, burn time.Duration, typ func(int) string, per time.Duration) []burned {
	out := make([]burned, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = burnLocked(burn, typ(i), per) }()
	}
	wg.Wait()
	return out
}

// meaningfulTimes skips the test when the system's thread times did not
// advance while a thread spun: then there is no figure to share out.
func meaningfulTimes(t *testing.T, bs []burned, burn time.Duration) {
	t.Helper()
	for _, b := range bs {
		if b.truth < int64(burn) {
			t.Skipf("GetThreadTimes of a thread that spun for 20 s advanced by %v, not the %v asked: this system's thread times give no figure to check against", time.Duration(b.truth), burn)
		}
	}
}

// waitMono polls w until its counters hold the CPU up to at least the
// moment at on monoNow's clock (within 30 s) and returns that snapshot.
// Snapshot.Through, a time.Time, would be off by however late Wine updates
// the clock time.Now reads.
func waitMono(t *testing.T, w *Watcher, at int64) Snapshot {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		w.eng.mu.Lock()
		through := w.eng.through()
		w.eng.mu.Unlock()
		if through >= at {
			return w.Snapshot()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counters hold the CPU only up to %v before the moment asked, 30 s after it", time.Duration(at-through))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWindowsLockedGoroutinesMatchThreadTimes: three goroutines locked to
// their threads burn CPU on two Ps, preempted and handed off; a recording
// gives each the growth of its thread's GetThreadTimes, within the
// quanta the times advance by, on the thread whose id the goroutine read
// from GetCurrentThreadId: the tracer's thread ids are Windows thread ids,
// and monoNow lines the samples up with the trace's segments.
func TestWindowsLockedGoroutinesMatchThreadTimes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rec, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	const burn = 300 * time.Millisecond
	bs := burnAll(3, burn, func(int) string { return "" }, burn)
	p, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	meaningfulTimes(t, bs, burn)
	if p.Exact || p.Complete || len(p.Problems) == 0 || !strings.HasPrefix(p.Problems[0], windowsReason) {
		t.Errorf("Exact %v, Complete %v, Problems %q: want inexact, saying %q", p.Exact, p.Complete, p.Problems, windowsReason)
	}
	t.Logf("problems: %q", p.Problems)
	for _, b := range bs {
		g, ok := byID(p, b.id)
		var th Thread
		for _, x := range p.Threads {
			if x.TID == b.tid {
				th = x
			}
		}
		tol := 2*quantum + b.truth/10
		t.Logf("goroutine %d on thread %d: %v; its thread's GetThreadTimes %v (allowed ±%v); the thread in the profile: %+v",
			b.id, b.tid, g.CPU, time.Duration(b.truth), time.Duration(tol), th)
		if !ok || int64(g.CPU) < b.truth-tol || int64(g.CPU) > b.truth+tol {
			t.Errorf("goroutine %d (listed %v): %v, its thread's GetThreadTimes %v", b.id, ok, g.CPU, time.Duration(b.truth))
		}
		if th.TID == 0 {
			t.Errorf("the profile has no thread %d, the GetCurrentThreadId of goroutine %d: the trace's thread ids are not Windows thread ids", b.tid, b.id)
		} else if th.Goroutines < g.CPU {
			t.Errorf("thread %d credited its goroutines %v, less than goroutine %d's %v, which ran on it alone", b.tid, th.Goroutines, b.id, g.CPU)
		}
	}
}

// TestWindowsWatchAgainstThreadAndProcessTimes: two task types burn on
// locked threads; each type's counter is held to its thread's
// GetThreadTimes growth, and all counters together to the process's
// GetProcessTimes from before Watch to after the snapshot (at most) and
// while the tasks ran (at least), give or take a quantum per thread:
// each thread's times and the process's advance by quanta apart.
func TestWindowsWatchAgainstThreadAndProcessTimes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p0 := processTimes()
	w, err := Watch(WithPeriod(250 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p1 := processTimes()
	const burn = 300 * time.Millisecond
	types := []string{"win-a", "win-b"}
	bs := burnAll(len(types), burn, func(i int) string { return types[i] }, 30*time.Millisecond)
	end := monoNow()
	p2 := processTimes()
	s := waitMono(t, w, end)
	p3 := processTimes()
	meaningfulTimes(t, bs, burn)
	if s.Exact || !strings.HasPrefix(s.Fallback, windowsReason) {
		t.Errorf("Exact %v, Fallback %q: want inexact, saying %q", s.Exact, s.Fallback, windowsReason)
	}
	threads := 0
	for _, err := range cputime.Threads(os.Getpid()) {
		if err != nil {
			t.Fatal(err)
		}
		threads++
	}
	t.Logf("no task %v, runtime %v, unattributed %v, lost generations %d; %d threads",
		s.NoTask, s.Runtime, s.Unattributed, s.LostGenerations, threads)
	for i, typ := range types {
		got := typeCPU(s, typ)
		tol := 2*quantum + bs[i].truth/10
		t.Logf("%s: %v over %d tasks; its thread's GetThreadTimes %v (allowed ±%v)", typ, got.CPU, got.Ended, time.Duration(bs[i].truth), time.Duration(tol))
		if got.Ended == 0 || int64(got.CPU) < bs[i].truth-tol || int64(got.CPU) > bs[i].truth+tol {
			t.Errorf("%s: %v over %d tasks, its thread's GetThreadTimes %v", typ, got.CPU, got.Ended, time.Duration(bs[i].truth))
		}
	}
	total := int64(s.Total())
	slack := int64(threads+2) * quantum
	t.Logf("all counters %v; GetProcessTimes %v while the tasks ran, %v from before Watch to after the snapshot (allowed ±%v)",
		time.Duration(total), time.Duration(p2-p1), time.Duration(p3-p0), time.Duration(slack))
	if total > p3-p0+slack {
		t.Errorf("the counters add up to %v, more than GetProcessTimes' %v", time.Duration(total), time.Duration(p3-p0))
	}
	if total < (p2-p1)*9/10-slack {
		t.Errorf("the counters add up to %v, under 90 %% of GetProcessTimes' %v while the tasks ran", time.Duration(total), time.Duration(p2-p1))
	}
}

// TestWindowsThreadClocksSeeExit: the sampler's handle on a thread outlives
// the thread, says it has ended (so the sampler reads it a last time and
// forgets it), and is closed then; the system's list drops the thread.
func TestWindowsThreadClocksSeeExit(t *testing.T) {
	var c threadClocks
	defer c.close()
	// The runtime never ends the process's first thread (it parks it
	// instead): this goroutine holds its own thread, so the others run
	// elsewhere, and one that lands on the first thread anyway lets go
	// and another tries.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	main, first := 0, time.Time{}
	for th, err := range cputime.Threads(os.Getpid()) {
		if err != nil {
			t.Fatal(err)
		}
		if main == 0 || th.Times.Creation.Before(first) {
			main, first = th.ID, th.Times.Creation
		}
	}
	tid, done := 0, make(chan struct{})
	for try := 0; try < 10 && (tid == 0 || tid == main); try++ {
		tidc := make(chan int)
		go func() {
			runtime.LockOSThread()
			tid := int(windows.GetCurrentThreadId())
			if tid != main { // times to read after it ends
				c0, x := ownThreadTimes(), uint64(1)
				for end := time.Now().Add(5 * time.Second); ownThreadTimes()-c0 < quantum && time.Now().Before(end); {
					x = spin(20000, x)
				}
				sink.Add(x)
			}
			tidc <- tid
			if tid == main {
				runtime.UnlockOSThread()
				return
			}
			<-done // returns locked: the runtime ends the thread with the goroutine
		}()
		tid = <-tidc
	}
	if tid == main {
		t.Skipf("10 goroutines in a row ran on the process's first thread %d, which the runtime never ends", main)
	}
	if _, gone, err := c.read(tid); err != nil || gone {
		t.Fatalf("thread %d, alive: gone %v, error %v", tid, gone, err)
	}
	if tids, err := c.list(); err != nil || !slices.Contains(tids, tid) {
		t.Fatalf("the list (error %v) lacks the live thread %d: %v", err, tid, tids)
	}
	alive, _, _ := c.read(tid)
	close(done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cpu, gone, err := c.read(tid)
		if err != nil {
			t.Fatalf("reading thread %d through its handle after its goroutine returned: %v", tid, err)
		}
		if gone {
			// Windows keeps an ended thread's times; Wine 8 reads 0, and
			// the sampler then loses the thread's last stretch.
			t.Logf("thread %d's times through the handle: %v alive, %v ended", tid, time.Duration(alive), time.Duration(cpu))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d not seen ended 10 s after its locked goroutine returned", tid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.forget(tid)
	if len(c.open) != 0 {
		t.Errorf("handles still open after forget: %v", c.open)
	}
	if tids, err := c.list(); err != nil || slices.Contains(tids, tid) {
		t.Errorf("the list (error %v) still has the ended thread %d: %v", err, tid, tids)
	}
}
