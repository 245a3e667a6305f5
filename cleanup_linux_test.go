package cputime_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// Handles dropped without Close give back what they hold once the garbage
// collector finds them unreachable: their pidfds, their kept-open /proc
// files and their place in the exit watcher. Counted in /proc/self/fd, not
// through the package.

// countFDs counts the calling process's open descriptors.
func countFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// collectUntil runs the garbage collector, and lets the cleanups it queues
// run, until done says so or the (generous) bound passes.
func collectUntil(bound time.Duration, done func() bool) bool {
	for deadline := time.Now().Add(bound); ; {
		runtime.GC()
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dropHandles opens n handles with open and drops them: nothing refers to
// them once it returns. It returns the number of descriptors open while
// they were.
func dropHandles(t *testing.T, n int, open func(i int) (any, error)) int {
	t.Helper()
	hs := make([]any, n)
	for i := range hs {
		h, err := open(i)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	fds := countFDs(t)
	clear(hs)
	return fds
}

// fdsBackTo collects garbage until the descriptor count is back to within
// slack of base, and fails if it never is.
func fdsBackTo(t *testing.T, base int, what string) {
	t.Helper()
	const slack = 3 // the runtime's own (a pipe, an epoll) may come and go
	var n int
	if !collectUntil(30*time.Second, func() bool { n = countFDs(t); return n <= base+slack }) {
		t.Fatalf("%s: %d descriptors open, %d before", what, n, base)
	}
	t.Logf("%s: %d descriptors open, %d before", what, n, base)
}

func TestDroppedHandlesRelease(t *testing.T) {
	const n = 2000
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		// A thread of ours that stays for the test: locked, never unlocked
		// until the end.
		ownTid := make(chan int)
		release := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			ownTid <- cputime.CurrentThreadID()
			<-release
			runtime.UnlockOSThread()
		}()
		own := <-ownTid
		defer close(release)

		kinds := []struct {
			name string
			open func(c *child, i int) (any, error)
		}{
			{"process", func(c *child, _ int) (any, error) { return o.OpenProcess(c.pid()) }},
			{"thread of another process", func(c *child, i int) (any, error) {
				if i%2 == 0 {
					return o.OpenThread(c.pid()) // its main thread
				}
				return o.OpenThread(c.tid)
			}},
			{"own thread", func(_ *child, _ int) (any, error) { return o.OpenThread(own) }},
		}
		for _, k := range kinds {
			t.Run(k.name, func(t *testing.T) {
				c := startChild(t, "idle")
				runtime.GC()
				base := countFDs(t)

				// Dropped while the task runs.
				if opened := dropHandles(t, n, func(i int) (any, error) { return k.open(c, i) }); opened < base+n {
					t.Fatalf("%d handles open hold %d descriptors; expected at least %d", n, opened-base, n)
				}
				fdsBackTo(t, base, "dropped while running")

				// Dropped, then the task exits (and is reaped) before the
				// collector runs: the exit watcher has seen every exit.
				// (Our own thread stays: there, dropped twice.)
				dropHandles(t, n, func(i int) (any, error) { return k.open(c, i) })
				c.stop()
				fdsBackTo(t, base, "dropped, then the task exited")
			})
		}
		if got := cputime.WatchedCount(); got != 0 {
			t.Errorf("exit watcher and poller still watch %d handles", got)
		}
		// The poller stops once it has nothing to watch.
		if !collectUntil(10*time.Second, func() bool { return !cputime.PollerRunning() }) {
			t.Error("exit poller still runs with nothing to watch")
		}
	})
}

// A handle in use is never released under its user: one whose Wait is
// running, with nothing else referring to it, and one still referenced.
func TestHandleInUseNotReleased(t *testing.T) {
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		c := startChild(t, "idle")
		done := make(chan error, 1)
		func() {
			h, err := o.OpenProcess(c.pid())
			if err != nil {
				t.Fatal(err)
			}
			// Only the goroutine in Wait refers to h from now on.
			go func(h *cputime.Process) { done <- h.Wait(context.Background()) }(h)
		}()
		kept, err := o.OpenThread(c.tid)
		if err != nil {
			t.Fatal(err)
		}
		defer kept.Close()

		// A dropped handle shows when the cleanups have run.
		runtime.GC()
		base := countFDs(t)
		dropHandles(t, 1, func(int) (any, error) { return o.OpenProcess(c.pid()) })
		fdsBackTo(t, base, "sentinel")
		for range 5 {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("Wait returned while the child runs: %v", err)
		default:
		}
		if tm, err := kept.Times(); err != nil || !tm.Exit.IsZero() {
			t.Fatalf("referenced handle after collection: %+v, %v", tm, err)
		}

		stopped := time.Now()
		c.stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Wait: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Wait still blocked 10 s after the child exited")
		}
		if err := kept.Wait(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
		tm, err := kept.Times()
		if err != nil || tm.Exit.IsZero() || tm.Exit.Before(stopped.Add(-time.Millisecond)) {
			t.Errorf("referenced handle after the exit: %+v, %v (stopped at %v)", tm, err, stopped)
		}
		if err := kept.Close(); err != nil {
			t.Errorf("closing the referenced handle: %v", err)
		}
		if err := kept.Close(); !errors.Is(err, cputime.ErrClosed) {
			t.Errorf("closing it again: %v", err)
		}
	})
}
