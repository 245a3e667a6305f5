package win32_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/cputime/cputime/win32"
)

func TestCurrentProcessTimes(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c, e, k, u win32.Filetime
	err := win32.GetProcessTimes(win32.CurrentProcess(), &c, &e, &k, &u)
	skipIfNotImplemented(t, err)
	before := processTimes(t, win32.CurrentProcess())
	start := time.Now()
	spinFor(200 * time.Millisecond)
	after := processTimes(t, win32.CurrentProcess())
	elapsed := time.Since(start)

	// The process was created before TestMain ran, and not long before.
	checkBetween(t, "creation time", before.creation, testMainStart.Add(-time.Minute), testMainStart)
	if !after.creation.Equal(before.creation) {
		t.Errorf("creation time moved from %v to %v", before.creation, after.creation)
	}
	if !before.exit.IsZero() || !after.exit.IsZero() {
		t.Errorf("running process has exit time %v, %v", before.exit, after.exit)
	}
	grew := after.total() - before.total()
	if grew <= 0 || after.kernel < before.kernel || after.user < before.user {
		t.Errorf("times did not grow over a %v busy loop: %+v then %+v", elapsed, before, after)
	}
	if limit := elapsed*time.Duration(runtime.NumCPU()) + timeSlack; grew > limit {
		t.Errorf("process used %v of CPU in %v of wall time on %d CPUs", grew, elapsed, runtime.NumCPU())
	}
}

func TestCurrentThreadTimes(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c, e, k, u win32.Filetime
	err := win32.GetThreadTimes(win32.CurrentThread(), &c, &e, &k, &u)
	skipIfNotImplemented(t, err)
	proc := processTimes(t, win32.CurrentProcess())
	before := threadTimes(t, win32.CurrentThread())
	start := time.Now()
	spinFor(200 * time.Millisecond)
	after := threadTimes(t, win32.CurrentThread())
	elapsed := time.Since(start)

	if runningOnWine() {
		// Wine stamps a process's creation time when its start-up is done,
		// after its first threads were created (hundreds of ms after).
		checkBetween(t, "thread creation time", before.creation, testMainStart.Add(-time.Minute), start)
	} else {
		checkBetween(t, "thread creation time", before.creation, proc.creation, start)
	}
	if !before.exit.IsZero() || !after.exit.IsZero() {
		t.Errorf("running thread has exit time %v, %v", before.exit, after.exit)
	}
	grew := after.total() - before.total()
	if grew <= 0 || after.kernel < before.kernel || after.user < before.user {
		t.Errorf("times did not grow over a %v busy loop: %+v then %+v", elapsed, before, after)
	}
	if grew > elapsed+timeSlack {
		t.Errorf("one thread used %v of CPU in %v of wall time", grew, elapsed)
	}

	// The same thread through a handle opened by id.
	tid := win32.GetCurrentThreadId()
	h := opened(t)(win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION, false, tid))
	if id, err := win32.GetThreadId(h); err != nil || id != tid {
		t.Errorf("GetThreadId = %d, %v; want %d", id, err, tid)
	}
	if pid, err := win32.GetProcessIdOfThread(h); err != nil || pid != win32.GetCurrentProcessId() {
		t.Errorf("GetProcessIdOfThread = %d, %v; want %d", pid, err, win32.GetCurrentProcessId())
	}
	byID := threadTimes(t, h)
	if !byID.creation.Equal(before.creation) && byID.creation.Sub(before.creation).Abs() > timeSlack {
		t.Errorf("creation time by handle %v, by pseudo-handle %v", byID.creation, before.creation)
	}
	if byID.total() < after.total() {
		t.Errorf("times by handle %+v below earlier times by pseudo-handle %+v", byID, after)
	}
}

func TestChildProcessTimes(t *testing.T) {
	if _, err := win32.OpenProcess(win32.SYNCHRONIZE, false, win32.GetCurrentProcessId()); err == win32.ERROR_CALL_NOT_IMPLEMENTED {
		skipIfNotImplemented(t, err)
	}
	c := startTestChild(t, "burn:150ms")
	h := opened(t)(win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION|win32.SYNCHRONIZE, false, c.pid()))
	if id, err := win32.GetProcessId(h); err != nil || id != c.pid() {
		t.Errorf("GetProcessId = %d, %v; want %d", id, err, c.pid())
	}
	running := processTimes(t, h)
	checkBetween(t, "creation time", running.creation, c.before, c.after)
	if !running.exit.IsZero() {
		t.Errorf("running child has exit time %v", running.exit)
	}
	// Wine 8's GetProcessTimes on another process returns the caller's own
	// kernel and user times: under Wine only the instants are checked.
	checkCPU := !runningOnWine()
	if !checkCPU {
		t.Log("under Wine: GetProcessTimes of another process gives the caller's own CPU times; they are not checked")
	}
	if checkCPU && running.total() <= 0 {
		t.Errorf("child burned 150 ms of CPU, times say %+v", running)
	}
	if ev, err := win32.WaitForSingleObject(h, 0); ev != win32.WAIT_TIMEOUT || err != nil {
		t.Errorf("WaitForSingleObject(running, 0) = %d, %v; want WAIT_TIMEOUT", ev, err)
	}
	if ev, err := win32.WaitForSingleObject(h, 30); ev != win32.WAIT_TIMEOUT || err != nil {
		t.Errorf("WaitForSingleObject(running, 30) = %d, %v; want WAIT_TIMEOUT", ev, err)
	}

	told := time.Now()
	c.stdin.Close()
	if ev, err := win32.WaitForSingleObject(h, win32.INFINITE); ev != win32.WAIT_OBJECT_0 || err != nil {
		t.Fatalf("WaitForSingleObject(INFINITE) = %d, %v; want WAIT_OBJECT_0", ev, err)
	}
	returned := time.Now()
	exited := processTimes(t, h)
	checkBetween(t, "exit time", exited.exit, told, returned)
	if !exited.creation.Equal(running.creation) {
		t.Errorf("creation time moved from %v to %v", running.creation, exited.creation)
	}
	if checkCPU && (exited.kernel < running.kernel || exited.user < running.user) {
		t.Errorf("times decreased: %+v then %+v", running, exited)
	}
	time.Sleep(20 * time.Millisecond)
	if again := processTimes(t, h); checkCPU && again != exited || !again.exit.Equal(exited.exit) {
		t.Errorf("times of an exited process changed: %+v then %+v", exited, again)
	}
	if ev, err := win32.WaitForSingleObject(h, 0); ev != win32.WAIT_OBJECT_0 || err != nil {
		t.Errorf("WaitForSingleObject(exited, 0) = %d, %v; want WAIT_OBJECT_0", ev, err)
	}

	// Cross-check with the parent's own accounting of its child.
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ps := c.cmd.ProcessState
	if !checkCPU {
		// Nothing to compare: both sides read the caller's own times.
	} else if runtime.GOOS == "windows" {
		// os gets these from GetProcessTimes too: they must be the same.
		if ps.UserTime() != exited.user || ps.SystemTime() != exited.kernel {
			t.Errorf("os.ProcessState says user %v kernel %v, GetProcessTimes %v %v",
				ps.UserTime(), ps.SystemTime(), exited.user, exited.kernel)
		}
	} else {
		// The rusage of wait4, in microseconds, split by sampled ticks as
		// ours is: the totals agree closely, each part within a tick or two.
		theirs := ps.UserTime() + ps.SystemTime()
		if d := (theirs - exited.total()).Abs(); d > 2*time.Millisecond+theirs/50 {
			t.Errorf("child's total: rusage %v, GetProcessTimes %v", theirs, exited.total())
		}
		if d := (ps.UserTime() - exited.user).Abs(); d > timeSlack {
			t.Errorf("child's user time: rusage %v, GetProcessTimes %v", ps.UserTime(), exited.user)
		}
	}
	t.Logf("child: created %v, exited %v after the wait began, kernel %v user %v",
		exited.creation.Sub(c.before), exited.exit.Sub(told), exited.kernel, exited.user)
}

func TestExitedThread(t *testing.T) {
	// The test's goroutine holds its thread, so the thread goroutine below
	// cannot start there: run alone, the test's thread is often the main
	// thread, where the goroutine would otherwise run and the test skip.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tid uint32
	release := make(chan struct{})
	for tries := 0; ; tries++ {
		ch := make(chan uint32)
		go func() {
			runtime.LockOSThread()
			id := win32.GetCurrentThreadId()
			ch <- id
			if id == mainThreadID {
				runtime.UnlockOSThread() // the main thread never exits
				return
			}
			<-release
			spinFor(30 * time.Millisecond)
			// Returning while locked makes the runtime end the thread.
		}()
		if tid = <-ch; tid != mainThreadID {
			break
		}
		if tries > 10 {
			t.Skip("the goroutine ran on the main thread every time")
		}
	}
	h, err := win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION|win32.SYNCHRONIZE, false, tid)
	if err != nil {
		close(release)
		skipIfNotImplemented(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { win32.CloseHandle(h) })
	running := threadTimes(t, h)
	if !running.exit.IsZero() {
		t.Errorf("running thread has exit time %v", running.exit)
	}
	if ev, err := win32.WaitForSingleObject(h, 0); ev != win32.WAIT_TIMEOUT || err != nil {
		t.Errorf("WaitForSingleObject(running, 0) = %d, %v; want WAIT_TIMEOUT", ev, err)
	}
	told := time.Now()
	close(release)
	if ev, err := win32.WaitForSingleObject(h, 10_000); ev != win32.WAIT_OBJECT_0 || err != nil {
		t.Fatalf("WaitForSingleObject(exiting thread, 10 s) = %d, %v; want WAIT_OBJECT_0", ev, err)
	}
	returned := time.Now()
	exited := threadTimes(t, h)
	checkBetween(t, "thread exit time", exited.exit, told, returned)
	switch {
	case runningOnWine() && exited.total() == 0:
		// Wine 8 reads a thread's times from the host while the thread
		// lives and has none once it has exited; Windows keeps them.
		t.Logf("under Wine: exited thread's kernel and user times are 0 (were %v, %v)", running.kernel, running.user)
	case exited.kernel < running.kernel || exited.user < running.user:
		t.Errorf("times decreased: %+v then %+v", running, exited)
	}
	if again := threadTimes(t, h); again != exited {
		switch {
		case runningOnWine() && again.total() == 0:
			// The same Wine shortfall, seen a moment later: the host
			// thread was still being torn down at the first read.
			t.Logf("under Wine: exited thread's times went from %+v to 0", exited)
		case runningOnWine() && again.exit.Equal(exited.exit) &&
			again.kernel >= exited.kernel && again.user >= exited.user:
			// Wine signals the handle before the host thread is gone
			// and reads the live host thread's ticks until then, so
			// its teardown can still add a tick. Windows freezes them.
			t.Logf("under Wine: exited thread's times still rose: %+v then %+v", exited, again)
		default:
			t.Errorf("times of an exited thread changed: %+v then %+v", exited, again)
		}
	}
	if id, err := win32.GetThreadId(h); err != nil || id != tid {
		t.Errorf("GetThreadId(exited) = %d, %v; want %d", id, err, tid)
	}
}
