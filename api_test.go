//go:build linux || windows

package cputime_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// The portable suite: the package's contract, checked the same way on every
// system with a backend (Linux natively, Windows under Wine too). The
// helpers it uses (startChild, burnCPU, mustOpenProcess, waitCtx, ...) have
// one definition per system.

// underWine is set on Windows when the tests run under Wine, whose
// deviations from Windows (DESIGN.md §5) are skipped with the reason.
var underWine bool

// tick bounds the granularity of the times under test: Linux reports
// exact totals, Windows advances them at the clock interrupt (15.625 ms),
// Wine in 10 ms ticks. Bounds below allow two.
const tick = 16 * time.Millisecond

// nonexistentID is an id no process or thread has: above Linux's PID_MAX_LIMIT
// (2^22), and a multiple of 4 as Windows ids are, far above any in use.
const nonexistentID = 1<<30 - 4

// notSupported skips the test if err says the platform cannot answer.
func notSupported(t *testing.T, err error, why string) {
	t.Helper()
	if errors.Is(err, cputime.ErrNotSupported) {
		if underWine && why != "" {
			t.Skipf("Wine: %s: %v", why, err)
		}
		t.Skipf("not supported here: %v", err)
	}
}

func TestAPICurrentProcessTimesGrow(t *testing.T) {
	before, err := cputime.CurrentProcess().Times()
	notSupported(t, err, "")
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	burnCPU(200 * time.Millisecond)
	runtime.UnlockOSThread()
	after, err := cputime.CurrentProcess().Times()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Total() - before.Total(); d < 200*time.Millisecond-2*tick {
		t.Errorf("process time grew by %v over a 200ms busy loop", d)
	}
	if after.Kernel < before.Kernel || after.User < before.User {
		t.Errorf("times went back: %+v then %+v", before, after)
	}
	if !after.Exit.IsZero() {
		t.Errorf("running process has exit time %v", after.Exit)
	}
	if after.Creation.IsZero() || after.Creation.After(time.Now()) || !after.Creation.Equal(before.Creation) {
		t.Errorf("creation %v, then %v", before.Creation, after.Creation)
	}
	byID, err := cputime.ProcessTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !byID.Creation.Equal(after.Creation) || byID.Total() < after.Total() {
		t.Errorf("ProcessTimes(own pid) = %+v, after %+v", byID, after)
	}
}

func TestAPICurrentThreadTimesGrow(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := cputime.CurrentThreadID()
	if got := cputime.CurrentThread().ID(); got != tid {
		t.Errorf("CurrentThread().ID() = %d, CurrentThreadID() = %d", got, tid)
	}
	h := mustOpenThread(t, tid)
	if h.ID() != tid || h.ProcessID() != os.Getpid() {
		t.Errorf("handle of thread %d of process %d: ID %d, ProcessID %d", tid, os.Getpid(), h.ID(), h.ProcessID())
	}
	before, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	pseudoBefore, err := cputime.CurrentThread().Times()
	if err != nil {
		t.Fatal(err)
	}
	burnCPU(100 * time.Millisecond)
	after, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	pseudoAfter, err := cputime.CurrentThread().Times()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		before, after cputime.Times
	}{{"handle", before, after}, {"pseudo-handle", pseudoBefore, pseudoAfter}} {
		if d := c.after.Total() - c.before.Total(); d < 100*time.Millisecond-2*tick || d > 10*time.Second {
			t.Errorf("%s: thread time grew by %v over a 100ms busy loop", c.name, d)
		}
		if !c.after.Exit.IsZero() {
			t.Errorf("%s: running thread has exit time %v", c.name, c.after.Exit)
		}
	}
	if !pseudoAfter.Creation.Equal(after.Creation) {
		t.Errorf("creation: %v through the pseudo-handle, %v through a handle", pseudoAfter.Creation, after.Creation)
	}
}

// A child burns CPU, says so, and exits when told. Through a handle opened
// while it ran: Wait returns after the exit; the exit time lies between
// the child's start and Wait's return; the final times are at least what
// the child burned, agree with what its parent learns (ProcessState), and
// stay put.
func TestAPIChildExit(t *testing.T) {
	const burned = 300 * time.Millisecond
	c := startChild(t, "burn:"+burned.String())
	h := mustOpenProcess(t, c.pid())
	running, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if !running.Exit.IsZero() {
		t.Errorf("running child has exit time %v", running.Exit)
	}
	// Wine 8's GetProcessTimes on another process returns the caller's own
	// kernel and user times (a child that burned 150 ms in user mode reads
	// as the parent's), so under Wine only the instants are checked.
	checkCPU := !underWine
	if !checkCPU {
		t.Log("Wine: GetProcessTimes of another process gives the caller's own CPU times; they are not checked")
	}
	if checkCPU && running.Total() < burned-tick {
		t.Errorf("child burned %v, its times say %v", burned, running.Total())
	}
	slack := 50 * time.Millisecond // creation within a tick or two of the truth
	if running.Creation.Before(c.started.Add(-slack)) || running.Creation.After(c.startedAfter.Add(slack)) {
		t.Errorf("creation %v, child started between %v and %v", running.Creation, c.started, c.startedAfter)
	}

	c.stdin.Close()
	if err := h.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	final, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if final.Exit.IsZero() {
		t.Fatal("no exit time after Wait returned")
	}
	if final.Exit.Before(running.Creation) || final.Exit.Before(c.started) || final.Exit.After(returned) {
		t.Errorf("exit %v: not between the start %v and Wait's return %v", final.Exit, c.started, returned)
	}
	if checkCPU && (final.Total() < running.Total() || final.Kernel < running.Kernel || final.User < running.User) {
		t.Errorf("final times %+v below the running ones %+v", final, running)
	}
	if !final.Creation.Equal(running.Creation) {
		t.Errorf("creation changed at exit: %v, then %v", running.Creation, final.Creation)
	}

	st := c.stop()
	parent := st.UserTime() + st.SystemTime()
	if d := final.Total() - parent; checkCPU && (d < -2*tick || d > 2*tick) {
		t.Errorf("final total %v, the parent's accounting %v", final.Total(), parent)
	}
	again, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if checkCPU && again != final || !again.Exit.Equal(final.Exit) || !again.Creation.Equal(final.Creation) {
		t.Errorf("times changed after the exit: %+v, then %+v", final, again)
	}
}

func TestAPIWaitCancelled(t *testing.T) {
	c := startChild(t, "idle")
	h := mustOpenProcess(t, c.pid())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}

	const timeout = 50 * time.Millisecond
	start := time.Now() // before the deadline is set: Wait cannot return before start+timeout
	ctx, cancel = context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := h.Wait(ctx)
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline: %v", err)
	}
	if elapsed < timeout || elapsed > 5*time.Second {
		t.Errorf("Wait with a %v timeout returned after %v", timeout, elapsed)
	}

	times, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if !times.Exit.IsZero() {
		t.Errorf("child still running has exit time %v", times.Exit)
	}
	c.stop()
	if err := h.Wait(waitCtx(t)); err != nil {
		t.Errorf("Wait after the exit: %v", err)
	}
}

// Closing a handle wakes a Wait on it, and every use afterwards fails with
// ErrClosed.
func TestAPIClosedHandle(t *testing.T) {
	c := startChild(t, "idle")
	h, err := cputime.OpenProcess(c.pid())
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		time.Sleep(50 * time.Millisecond) // let Wait start waiting
		h.Close()
	}()
	if err := h.Wait(waitCtx(t)); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("Wait on a handle closed meanwhile: %v", err)
	}
	<-closed // Wait may return as Close begins; the rest needs it done
	if _, err := h.Times(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("Times on a closed handle: %v", err)
	}
	if _, err := h.CycleTime(); !errors.Is(err, cputime.ErrClosed) && !errors.Is(err, cputime.ErrNotSupported) {
		t.Errorf("CycleTime on a closed handle: %v", err)
	}
	if err := h.Wait(waitCtx(t)); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("Wait on a closed handle: %v", err)
	}
	if err := h.Close(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th, err := cputime.OpenThread(cputime.CurrentThreadID())
	if err != nil {
		t.Fatal(err)
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Times(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("Times on a closed thread handle: %v", err)
	}
	if err := th.Close(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("second Close of a thread handle: %v", err)
	}
}

// A thread of a child process: its handle names the child; it is listed
// among the child's threads; it exits with the child.
func TestAPIThreadOfChild(t *testing.T) {
	c := startChild(t, "idle")
	th := mustOpenThread(t, c.tid)
	if th.ProcessID() != c.pid() {
		t.Errorf("thread %d: ProcessID %d, the child is %d", c.tid, th.ProcessID(), c.pid())
	}
	running, err := th.Times()
	if err != nil {
		t.Fatal(err)
	}
	if !running.Exit.IsZero() || running.Creation.IsZero() {
		t.Errorf("running thread: %+v", running)
	}
	found := false
	for info, err := range cputime.Threads(c.pid()) {
		if err != nil {
			t.Fatal(err)
		}
		if info.ProcessID != c.pid() {
			t.Errorf("thread %d listed for process %d says ProcessID %d", info.ID, c.pid(), info.ProcessID)
		}
		if info.ID == c.tid {
			found = true
		}
	}
	if !found {
		t.Errorf("thread %d not among the threads of process %d", c.tid, c.pid())
	}
	c.stop()
	if err := th.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	final, err := th.Times()
	if err != nil {
		t.Fatal(err)
	}
	if final.Exit.IsZero() || final.Exit.Before(final.Creation) {
		t.Errorf("exited thread: %+v", final)
	}
}

// mainThread returns the id of the process's main thread: on Linux the one
// whose id is the process's, elsewhere the one created first.
func mainThread(t *testing.T) int {
	t.Helper()
	main, first := 0, time.Time{}
	for info, err := range cputime.Threads(os.Getpid()) {
		if err != nil {
			t.Fatal(err)
		}
		if info.ID == os.Getpid() {
			return info.ID
		}
		if main == 0 || info.Times.Creation.Before(first) {
			main, first = info.ID, info.Times.Creation
		}
	}
	return main
}

// A thread of this process exits (a locked goroutine that returns takes
// its thread with it); its handle sees the exit.
func TestAPIThreadExit(t *testing.T) {
	mainTID := mainThread(t)
	tids := make(chan int)
	release := make(chan struct{})
	exiting := func(tids chan<- int) {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		tids <- cputime.CurrentThreadID()
		<-release
		burnCPU(30 * time.Millisecond)
	}
	go func() {
		runtime.LockOSThread()
		if cputime.CurrentThreadID() != mainTID {
			tids <- cputime.CurrentThreadID()
			<-release
			burnCPU(30 * time.Millisecond)
			return // exits the thread
		}
		// The Go runtime never ends the main thread: keep it locked here
		// while another goroutine takes a thread of its own.
		other := make(chan int)
		go exiting(other)
		tid := <-other
		runtime.UnlockOSThread()
		tids <- tid
	}()
	th := mustOpenThread(t, <-tids)
	if th.ID() == mainTID {
		t.Fatalf("thread %d is the main thread", th.ID())
	}
	close(release)
	if err := th.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	final, err := th.Times()
	if err != nil {
		t.Fatal(err)
	}
	if final.Exit.IsZero() || final.Exit.Before(final.Creation) || final.Exit.After(time.Now()) {
		t.Errorf("exited thread: %+v", final)
	}
	if final.Total() < 30*time.Millisecond-2*tick {
		t.Errorf("thread burned 30ms, its final times say %v", final.Total())
	}
}

func TestAPIEnumeration(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := os.Getpid(), cputime.CurrentThreadID()

	found := false
	for info, err := range cputime.Threads(pid) {
		if err != nil {
			t.Fatal(err)
		}
		if info.ProcessID != pid {
			t.Errorf("thread %d of process %d says ProcessID %d", info.ID, pid, info.ProcessID)
		}
		if info.Times.Creation.IsZero() || info.Times.Creation.After(time.Now()) || !info.Times.Exit.IsZero() {
			t.Errorf("thread %d: %+v", info.ID, info.Times)
		}
		found = found || info.ID == tid
	}
	if !found {
		t.Errorf("the calling thread %d is not among Threads(%d)", tid, pid)
	}

	found = false
	for info, err := range cputime.AllThreads() {
		if err != nil {
			t.Fatal(err)
		}
		found = found || info.ID == tid && info.ProcessID == pid
	}
	if !found {
		t.Errorf("the calling thread %d is not among AllThreads", tid)
	}

	own, err := cputime.ProcessInfoOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	if own.ID != pid || own.Threads < 1 || !strings.Contains(own.Name, "cputime") || own.Times.Creation.IsZero() {
		t.Errorf("ProcessInfoOf(own pid) = %+v", own)
	}
	if ppid := os.Getppid(); own.ParentID != ppid {
		t.Errorf("ParentID %d, os.Getppid %d", own.ParentID, ppid)
	}
	found = false
	for info, err := range cputime.Processes() {
		if err != nil {
			t.Fatal(err)
		}
		if info.ID <= 0 {
			t.Errorf("process with id %d listed", info.ID)
		}
		if info.ID == pid {
			found = true
			if !info.Times.Creation.Equal(own.Times.Creation) || info.Times.Total() < own.Times.Total() {
				t.Errorf("Processes lists us with %+v, ProcessInfoOf said %+v", info.Times, own.Times)
			}
		}
	}
	if !found {
		t.Errorf("process %d is not among Processes", pid)
	}
}

func TestAPIErrors(t *testing.T) {
	for _, id := range []int{0, -1} {
		if _, err := cputime.OpenProcess(id); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenProcess(%d): %v", id, err)
		}
		if _, err := cputime.OpenThread(id); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenThread(%d): %v", id, err)
		}
		if _, err := cputime.ProcessInfoOf(id); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("ProcessInfoOf(%d): %v", id, err)
		}
		for _, err := range cputime.Threads(id) {
			if !errors.Is(err, cputime.ErrInvalidArgument) {
				t.Errorf("Threads(%d): %v", id, err)
			}
		}
	}

	const id = nonexistentID
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, cputime.ErrNotFound) {
			t.Errorf("%s of nonexistent id %d: %v", what, id, err)
		}
	}
	_, err := cputime.OpenProcess(id)
	check("OpenProcess", err)
	_, err = cputime.OpenThread(id)
	check("OpenThread", err)
	_, err = cputime.ProcessTimes(id)
	check("ProcessTimes", err)
	_, err = cputime.ThreadTimes(id)
	check("ThreadTimes", err)
	_, err = cputime.ProcessInfoOf(id)
	check("ProcessInfoOf", err)
	n := 0
	for _, err := range cputime.Threads(id) {
		check("Threads", err)
		n++
	}
	if n != 1 {
		t.Errorf("Threads of a nonexistent process yielded %d results, want one error", n)
	}

	if err := cputime.CurrentProcess().Wait(context.Background()); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("the process waiting for itself: %v", err)
	}
	if err := cputime.CurrentThread().Wait(context.Background()); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("the thread waiting for itself: %v", err)
	}
	if err := cputime.CurrentProcess().Close(); err != nil {
		t.Errorf("closing the process pseudo-handle: %v", err)
	}
	if err := cputime.CurrentThread().Close(); err != nil {
		t.Errorf("closing the thread pseudo-handle: %v", err)
	}
}

// Rights are checked per query, as Windows checks them: a handle opened
// only to wait cannot read times, and one opened only to read cannot wait.
func TestAPIAccess(t *testing.T) {
	c := startChild(t, "idle")
	syncOnly, err := cputime.OpenProcessAccess(c.pid(), cputime.Synchronize)
	if err != nil {
		t.Fatal(err)
	}
	defer syncOnly.Close()
	if syncOnly.Access() != cputime.Synchronize {
		t.Errorf("Access() = %v", syncOnly.Access())
	}
	if _, err := syncOnly.Times(); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("Times through a SYNCHRONIZE handle: %v", err)
	}
	if _, err := syncOnly.CycleTime(); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("CycleTime through a SYNCHRONIZE handle: %v", err)
	}

	queryOnly, err := cputime.OpenProcessAccess(c.pid(), cputime.ProcessQueryLimitedInformation)
	if err != nil {
		t.Fatal(err)
	}
	defer queryOnly.Close()
	if _, err := queryOnly.Times(); err != nil {
		t.Errorf("Times through a QUERY_LIMITED_INFORMATION handle: %v", err)
	}
	if err := queryOnly.Wait(context.Background()); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("Wait through a handle without SYNCHRONIZE: %v", err)
	}

	full, err := cputime.OpenProcessAccess(c.pid(), cputime.ProcessQueryInformation)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	if full.Access()&cputime.ProcessQueryLimitedInformation == 0 {
		t.Errorf("QUERY_INFORMATION does not imply the limited right: %v", full.Access())
	}
	if _, err := full.Times(); err != nil {
		t.Errorf("Times through a QUERY_INFORMATION handle: %v", err)
	}

	for _, a := range []cputime.Access{cputime.ThreadQueryInformation, 0x1} {
		if _, err := cputime.OpenProcessAccess(c.pid(), a); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenProcessAccess(%v): %v", a, err)
		}
	}

	c.stop()
	if err := syncOnly.Wait(waitCtx(t)); err != nil {
		t.Errorf("Wait through a SYNCHRONIZE handle: %v", err)
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th, err := cputime.OpenThreadAccess(cputime.CurrentThreadID(), cputime.Synchronize)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	if th.ProcessID() != os.Getpid() {
		t.Errorf("SYNCHRONIZE thread handle: ProcessID %d, want %d", th.ProcessID(), os.Getpid())
	}
	if _, err := th.Times(); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("Times through a SYNCHRONIZE thread handle: %v", err)
	}
	if _, err := cputime.OpenThreadAccess(cputime.CurrentThreadID(), cputime.ProcessQueryInformation); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("OpenThreadAccess with a process right: %v", err)
	}
}

func TestAPIReferenceFrequency(t *testing.T) {
	f, err := cputime.ReferenceFrequency()
	notSupported(t, err, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reference frequency %v", f)
	if f.Hz < 1e7 || f.Hz > 1e10 || f.Source == "" {
		t.Errorf("reference frequency %v", f)
	}
	again, err := cputime.ReferenceFrequency()
	if err != nil || again != f {
		t.Errorf("second call: %v, %v; first %v", again, err, f)
	}
}

// Cycle times grow with CPU time at about the reference frequency: exactly
// on Linux, where they are derived from the exact times, and within the
// tick-sampled times' granularity on Windows, where they are counted.
func TestAPICycleTimes(t *testing.T) {
	f, err := cputime.ReferenceFrequency()
	notSupported(t, err, "")
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	th := mustOpenThread(t, cputime.CurrentThreadID())

	type reading struct {
		process, thread, pseudo uint64
		times                   cputime.Times
	}
	read := func() reading {
		var r reading
		var err error
		r.process, err = cputime.CurrentProcess().CycleTime()
		notSupported(t, err, "QueryProcessCycleTime is a stub that fails")
		if err != nil {
			t.Fatal(err)
		}
		if r.thread, err = th.CycleTime(); err != nil {
			t.Fatal(err)
		}
		if r.pseudo, err = cputime.CurrentThread().CycleTime(); err != nil {
			t.Fatal(err)
		}
		if r.times, err = th.Times(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := read()
	burnCPU(200 * time.Millisecond)
	b := read()
	if b.process < a.process || b.thread < a.thread || b.pseudo < a.pseudo {
		t.Fatalf("cycle times went back: %+v, then %+v", a, b)
	}
	want := float64(f.Hz) * (b.times.Total() - a.times.Total()).Seconds()
	got := float64(b.thread - a.thread)
	if got < 0.75*want || got > 1.35*want {
		t.Errorf("thread used %v of CPU time (%.0f cycles at %v) and %.0f cycles", b.times.Total()-a.times.Total(), want, f, got)
	}
	if b.process-a.process < b.thread-a.thread-b.thread/1000 {
		t.Errorf("process cycles grew by %d, less than its thread's %d", b.process-a.process, b.thread-a.thread)
	}
}

func TestAPIIdleProcessorCycleTimes(t *testing.T) {
	if underWine {
		t.Skip("Wine: QueryIdleProcessorCycleTime is not implemented, and calling it aborts the process")
	}
	first, err := cputime.IdleProcessorCycleTimes()
	notSupported(t, err, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 1 {
		t.Fatal("no processors")
	}
	time.Sleep(20 * time.Millisecond)
	second, err := cputime.AppendIdleProcessorCycleTimes(make([]uint64, 0, len(first)))
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != len(first) {
		t.Fatalf("%d processors, then %d", len(first), len(second))
	}
	for i := range first {
		if second[i] < first[i] {
			t.Errorf("CPU %d: idle cycles went back from %d to %d", i, first[i], second[i])
		}
	}
}

func TestAPIMeasure(t *testing.T) {
	u, err := cputime.Measure(func() { burnCPU(100 * time.Millisecond) })
	notSupported(t, err, "")
	if err != nil {
		t.Fatal(err)
	}
	if u.Total() < 100*time.Millisecond-2*tick || u.Total() > 10*time.Second {
		t.Errorf("Measure of a 100ms busy loop: %+v", u)
	}
	r, err := cputime.StartRegion()
	if err != nil {
		t.Fatal(err)
	}
	u, err = r.End()
	if err != nil {
		t.Fatal(err)
	}
	if u.Total() > 2*tick {
		t.Errorf("an empty region used %+v", u)
	}
}
