package cputime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// withAndWithoutPidfd runs test twice: with pidfds (the package's
// functions), and with the fallback of kernels that have none (kept-open
// /proc files, polling: an Engine without pidfds). test opens its handles
// through o.
func withAndWithoutPidfd(t *testing.T, test func(t *testing.T, o opener)) {
	t.Run("pidfd", func(t *testing.T) { test(t, api{}) })
	t.Run("nopidfd", func(t *testing.T) { test(t, cputime.NewEngine(cputime.EngineConfig{NoPidfd: true})) })
}

// opener opens handles: the package's functions, or a test's Engine.
type opener interface {
	OpenProcess(pid int) (*cputime.Process, error)
	OpenThread(tid int) (*cputime.Thread, error)
}

// api is the package's functions, over the default engine.
type api struct{}

func (api) OpenProcess(pid int) (*cputime.Process, error) { return cputime.OpenProcess(pid) }
func (api) OpenThread(tid int) (*cputime.Thread, error)   { return cputime.OpenThread(tid) }

// mustOpenProcessBy opens process pid through o, closed when t ends.
func mustOpenProcessBy(t testing.TB, o opener, pid int) *cputime.Process {
	t.Helper()
	h, err := o.OpenProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mustOpenThreadBy opens thread tid through o, closed when t ends.
func mustOpenThreadBy(t testing.TB, o opener, tid int) *cputime.Thread {
	t.Helper()
	h, err := o.OpenThread(tid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// A child burns CPU and exits. Through a handle opened while it ran: Wait
// returns after the exit; the exit time lies between the child's last word
// and Wait's return; the final times equal what the kernel's wait accounting
// gives its parent (ProcessState); and they stay put.
func TestExitOfChild(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		c := startChild(t, "burn:150ms") // burns, says ready, exits when stdin closes
		h := mustOpenProcessBy(t, o, c.pid())
		before, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if !before.Exit.IsZero() {
			t.Fatalf("running child has exit time %v", before.Exit)
		}
		lastWord := time.Now()
		c.stdin.Close()
		if err := h.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		waited := time.Now()
		final, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		// Read before reaping: with the zombie still there, the times are
		// its final accounting.
		ps := c.stop()
		if final.Exit.Before(lastWord) || final.Exit.After(waited) {
			t.Errorf("exit time %v not within [%v, %v]", final.Exit, lastWord, waited)
		}
		if final.Exit.Before(final.Creation) {
			t.Errorf("exit %v before creation %v", final.Exit, final.Creation)
		}
		user, sys := ps.UserTime(), ps.SystemTime()
		// rusage is the same accounting, truncated to microseconds.
		if d := final.Total() - (user + sys); d < 0 || d > 2*time.Microsecond {
			t.Errorf("final total %v, ProcessState %v (+%v): differ by %v", final.Total(), user+sys, user, d)
		}
		tick := time.Second / 100
		if d := (final.User - user).Abs(); d > tick {
			t.Errorf("final user %v, ProcessState %v", final.User, user)
		}
		if final.Total() < 150*time.Millisecond {
			t.Errorf("final total %v, the child burned 150ms", final.Total())
		}
		// Reaped now: the handle still reports the same final times.
		for range 3 {
			again, err := h.Times()
			if err != nil {
				t.Fatal(err)
			}
			if again != final {
				t.Fatalf("after reaping: %+v, before: %+v", again, final)
			}
		}
	})
}

// How close the exit time is to the exit: each child prints its clock just
// before it exits; the exit time must come after that and before Wait
// returned. The spread is logged (see the README for figures).
func TestExitTimeAccuracy(t *testing.T) {
	const n = 20
	var lags []time.Duration
	for range n {
		c := startChild(t, "exitstamp")
		h, err := cputime.OpenProcess(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		c.stdin.Close()
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			t.Fatalf("child said %q", line)
		}
		stamp := time.Unix(0, ns)
		if err := h.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		waited := time.Now()
		tm, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		c.stop()
		if tm.Exit.Before(stamp) || tm.Exit.After(waited) {
			t.Errorf("exit time %v not within [%v, %v]", tm.Exit, stamp, waited)
		}
		lags = append(lags, tm.Exit.Sub(stamp))
	}
	slices.Sort(lags)
	t.Logf("exit time after the child's last instruction: min %v, median %v, max %v", lags[0], lags[n/2], lags[n-1])
}

// A process that is not our child: its parent reaps it. The handle still
// reports its exit and its last times, never less than those seen before.
func TestExitOfNonChild(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		c := startChild(t, "spawn:spin")
		grandchild := c.tid // spawn reports the grandchild's pid
		h := mustOpenProcessBy(t, o, grandchild)
		var before cputime.Times
		var err error
		for before.Total() < 20*time.Millisecond {
			if before, err = h.Times(); err != nil {
				t.Fatal(err)
			}
		}
		closed := time.Now()
		c.stdin.Close() // the grandchild shares it, exits, and its parent reaps it
		if err := h.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		waited := time.Now()
		final, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if final.Exit.Before(closed) || final.Exit.After(waited) {
			t.Errorf("exit time %v not within [%v, %v]", final.Exit, closed, waited)
		}
		if final.User < before.User || final.Kernel < before.Kernel {
			t.Errorf("final %+v less than before %+v", final, before)
		}
		if final.Creation != before.Creation {
			t.Errorf("creation moved: %v, then %v", before.Creation, final.Creation)
		}
	})
}

// Wait honours its context, and needs Synchronize.
func TestWaitContext(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		c := startChild(t, "idle")
		h := mustOpenProcessBy(t, o, c.pid())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.Wait(ctx) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Wait after cancel: %v", err)
		}
		if tm, err := h.Times(); err != nil || !tm.Exit.IsZero() {
			t.Errorf("running child: %+v, %v", tm, err)
		}
		if err := cputime.CurrentProcess().Wait(ctx); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("waiting for ourselves: %v", err)
		}

		// Closing the handle ends a Wait on it with ErrClosed (Windows
		// leaves closing a handle under WaitForSingleObject undefined).
		h2, err := o.OpenProcess(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- h2.Wait(context.Background()) }()
		h2.Close()
		select {
		case err := <-done:
			if !errors.Is(err, cputime.ErrClosed) {
				t.Errorf("Wait on a closed handle: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Wait still blocked 10 s after Close")
		}
	})
}

// A thread of another process exits: its handle reports the exit time and
// its last times, and never another thread's.
func TestExitedThread(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		c := startChild(t, "spin")
		h := mustOpenThreadBy(t, o, c.tid)
		before, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		c.stop()
		if err := h.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		final, err := h.Times()
		if err != nil {
			t.Fatalf("exited thread: %v", err)
		}
		if final.Exit.IsZero() || final.Exit.Before(closed) || final.Exit.After(time.Now()) {
			t.Errorf("exit time %v, closed stdin at %v", final.Exit, closed)
		}
		if final.Total() < before.Total() || final.Creation != before.Creation {
			t.Errorf("final %+v, before %+v", final, before)
		}
	})
}

// A thread of our own process exits (a goroutine locked to its thread
// returns, and the runtime ends the thread).
func TestExitedOwnThread(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		var tid int
		proceed := make(chan struct{})
		for {
			tids := make(chan int)
			go runLockedAndExit(func() {
				burnCPU(5 * time.Millisecond)
				tids <- cputime.CurrentThreadID()
				<-proceed
			})
			// The runtime never ends the main thread: it parks it for good
			// instead. Try again on another.
			if tid = <-tids; tid != os.Getpid() {
				break
			}
			proceed <- struct{}{}
		}
		h := mustOpenThreadBy(t, o, tid)
		before, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if before.Total() < 5*time.Millisecond {
			t.Errorf("thread burned 5ms, handle says %v", before.Total())
		}
		close(proceed)
		if err := h.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		final, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if final.Exit.IsZero() || final.Total() < before.Total() {
			t.Errorf("final %+v, before %+v", final, before)
		}
	})
}

// runLockedAndExit runs f on a goroutine locked to its thread and returns
// without unlocking: the runtime then terminates the thread.
func runLockedAndExit(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

// A stopped process keeps reporting its times, which stop growing, and
// grow again once it continues.
func TestSuspended(t *testing.T) {
	c := startChild(t, "spin")
	p := mustOpenProcess(t, c.pid())
	th := mustOpenThread(t, c.tid)
	if err := syscall.Kill(c.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(c.pid(), syscall.SIGCONT)
	for tid := range listTasks(t, c.pid()) { // every thread, not only the spinning one
		waitState(t, c.pid(), tid, func(s string) bool { return s == "T" || s == "t" })
	}
	p1, err1 := p.Times()
	t1, err2 := th.Times()
	time.Sleep(50 * time.Millisecond) // any time: a stopped task gains none
	p2, err3 := p.Times()
	t2, err4 := th.Times()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if p1 != p2 || t1 != t2 {
		t.Errorf("stopped, yet times moved: process %+v -> %+v, thread %+v -> %+v", p1, p2, t1, t2)
	}
	if !p1.Exit.IsZero() || !t1.Exit.IsZero() {
		t.Errorf("a stopped task has not exited: %+v, %+v", p1, t1)
	}
	if err := syscall.Kill(c.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		t3, err := th.Times()
		if err != nil {
			t.Fatal(err)
		}
		if t3.Total() > t2.Total() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("continued, yet the thread's time stays at %v", t3.Total())
		}
		time.Sleep(time.Millisecond)
	}
}

// waitState polls /proc/pid/task/tid/stat until its state satisfies ok.
func waitState(t *testing.T, pid, tid int, ok func(string) bool) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		state := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
		if ok(state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d stays in state %s", tid, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// PID reuse: after a child exits and the kernel hands its pid to a new
// process, the old handles report the old process (exited, final times) and
// never the new one. As root, /proc/sys/kernel/ns_last_pid steers the next
// pid; elsewhere the test skips.
func TestPIDReuse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("steering pids through /proc/sys/kernel/ns_last_pid needs root")
	}
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		old := startChild(t, "burn:30ms")
		pid := old.pid()
		p := mustOpenProcessBy(t, o, pid)
		th, err := o.OpenThread(pid) // its main thread
		if err != nil {
			t.Fatal(err)
		}
		defer th.Close()
		oldTimes, err := p.Times()
		if err != nil {
			t.Fatal(err)
		}
		old.stop() // exited and reaped: pid is free

		var reuser *child
		for attempt := 0; attempt < 50 && reuser == nil; attempt++ {
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
				t.Skipf("cannot steer pids: %v", err)
			}
			c := startChild(t, "spin")
			if c.pid() == pid {
				reuser = c
				break
			}
			c.stop() // another process took the pid first: try again
		}
		if reuser == nil {
			t.Skip("the kernel never handed the pid out again (a busy machine?)")
		}
		// The new process runs under the old pid and burns CPU.
		fresh := mustOpenProcessBy(t, o, pid)
		var freshTimes cputime.Times
		for freshTimes.Total() <= oldTimes.Total()+50*time.Millisecond {
			if freshTimes, err = fresh.Times(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := p.Times()
		if err != nil {
			t.Fatal(err)
		}
		// The old process only exited after oldTimes: a little more CPU,
		// far less than the new one has burned.
		if got.Exit.IsZero() || got.Creation != oldTimes.Creation ||
			got.Total() < oldTimes.Total() || got.Total() > oldTimes.Total()+20*time.Millisecond {
			t.Errorf("old handle after reuse: %+v; old process was %+v; new is %+v", got, oldTimes, freshTimes)
		}
		gotThread, err := th.Times()
		if err != nil {
			t.Fatal(err)
		}
		if gotThread.Exit.IsZero() || gotThread.Total() > oldTimes.Total()+20*time.Millisecond {
			t.Errorf("old thread handle after reuse: %+v; the new process has %v", gotThread, freshTimes.Total())
		}
		if !freshTimes.Creation.After(oldTimes.Creation) || !freshTimes.Exit.IsZero() {
			t.Errorf("new handle: %+v", freshTimes)
		}
	})
}
