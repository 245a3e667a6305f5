package cputime_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// processCPU is the calling process's user + system time, from
// getrusage(RUSAGE_SELF): the kernel's word, not the package's.
func processCPU() time.Duration {
	u, s := rusage(unix.RUSAGE_SELF)
	return u + s
}

// Thousands of goroutines in Wait on tasks that do nothing cost (next to)
// nothing, and all return soon after their task exits: with pidfds (one
// epoll set for every handle) and without (one poller for every handle).
func TestIdleWaitersCost(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 waiters for a few seconds")
	}
	const n = 5000
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		// Three idle processes, each waited for by n/4 handles, and the
		// 8 threads of a fourth, waited for by the rest.
		var procs []*child
		for range 3 {
			procs = append(procs, startChild(t, "idle"))
		}
		threaded := startChild(t, "threads:8")
		tids := slices.Sorted(func(yield func(int) bool) {
			for tid := range listTasks(t, threaded.pid()) {
				if !yield(tid) {
					return
				}
			}
		})

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type waited struct {
			at  time.Time
			err error
		}
		results := make(chan waited, n)
		var started sync.WaitGroup
		wait := func(h interface {
			Wait(context.Context) error
			Close() error
		}) {
			started.Add(1)
			go func() {
				defer h.Close()
				started.Done()
				err := h.Wait(ctx)
				results <- waited{time.Now(), err}
			}()
		}
		for i := range n {
			if i < 3*n/4 {
				h, err := o.OpenProcess(procs[i%3].pid())
				if err != nil {
					t.Fatal(err)
				}
				wait(h)
			} else {
				h, err := o.OpenThread(tids[i%len(tids)])
				if err != nil {
					t.Fatal(err)
				}
				wait(h)
			}
		}
		started.Wait()
		// Let every goroutine reach its Wait (and the poller slow down to
		// its idle pace) before measuring.
		time.Sleep(time.Second)

		const window = 3 * time.Second
		cpu0, wall0 := processCPU(), time.Now()
		time.Sleep(window)
		cpu, wall := processCPU()-cpu0, time.Since(wall0)
		share := float64(cpu) / float64(wall)
		t.Logf("%d waiters on idle tasks: %v of CPU in %v (%.2f%% of one CPU)", n, cpu, wall.Round(time.Millisecond), 100*share)
		// The goal is under 1 %; the bound leaves room for a shared machine.
		if share > 0.05 {
			t.Errorf("%d idle waiters use %.1f%% of a CPU", n, 100*share)
		}
		select {
		case r := <-results:
			t.Fatalf("a Wait returned while its task runs: %v", r.err)
		default:
		}

		// Every task exits; every waiter returns, nil, within a second.
		exited := time.Now()
		for _, c := range append(procs, threaded) {
			c.stdin.Close()
		}
		var last time.Duration
		timeout := time.After(30 * time.Second)
		for range n {
			select {
			case r := <-results:
				if r.err != nil {
					t.Fatalf("Wait: %v", r.err)
				}
				last = max(last, r.at.Sub(exited))
			case <-timeout:
				t.Fatal("waiters still blocked 30 s after their tasks exited")
			}
		}
		t.Logf("every waiter returned within %v of the exits", last)
		// The design bound is a second (the poller's slowest pace is 250 ms);
		// the measurement also holds the child's teardown of 1,000 threads
		// and, in CI, the other packages' tests on the same 2 CPUs.
		bound := 3 * time.Second
		if raceEnabled() {
			bound *= 5 // 3.5 s seen without pidfds, with four CPU hogs
		}
		if last > bound {
			t.Errorf("the last waiter returned %v after the exits", last)
		}
	})
}

// As many tasks as waiters: a child's 1,000 threads, one Wait on each.
// With pidfds each is one epoll registration; without, the poller reads
// each thread's stat file at each sweep, and its pace keeps that under 1 %
// of a CPU.
func TestIdleWaitersManyTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 waiters for a few seconds")
	}
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		c := startChild(t, "threads:1000")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		results := make(chan error, 2000)
		n := 0
		for tid := range listTasks(t, c.pid()) {
			h := mustOpenThreadBy(t, o, tid)
			go func() { results <- h.Wait(ctx) }()
			n++
		}
		time.Sleep(time.Second) // every waiter blocked, the poller at its idle pace
		cpu0, wall0 := processCPU(), time.Now()
		time.Sleep(3 * time.Second)
		cpu, wall := processCPU()-cpu0, time.Since(wall0)
		share := float64(cpu) / float64(wall)
		t.Logf("%d waiters on %d idle threads: %v of CPU in %v (%.2f%% of one CPU)", n, n, cpu, wall.Round(time.Millisecond), 100*share)
		if share > 0.05 {
			t.Errorf("%d idle waiters use %.1f%% of a CPU", n, 100*share)
		}
		exited := time.Now()
		c.stdin.Close()
		limit := max(30*time.Second, 2*waitBound())
		if raceEnabled() {
			limit = 2 * time.Minute
		}
		timeout := time.After(limit)
		for range n {
			select {
			case err := <-results:
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
			case <-timeout:
				t.Fatalf("waiters still blocked %v after their tasks exited", limit)
			}
		}
		last := time.Since(exited)
		t.Logf("every waiter returned within %v of the exit", last)
		// The design bound is a second (the poller's slowest pace is 250 ms);
		// the measurement also holds the child's teardown of 1,000 threads
		// and, in CI, the other packages' tests on the same 2 CPUs.
		// Without pidfds the poller's pace keeps the CPU its sweeps use
		// under 1 % of a CPU (the next sweep waits 100 times the last
		// one's CPU), and the race detector makes each read of the sweep
		// many times dearer: a sweep of 1,000 threads costs 100-300 ms
		// under it, so the sweep after one that began just before the
		// exit comes 10-30 s later (14.9-19.7 s seen on one 2-vCPU VM,
		// 32.6 s on another whose page faults cost 10-25 µs; 1.9-2.6 s
		// when the test ran alone; 0.1-0.5 s without -race). That is the
		// budget at work, not a late poller: under -race only the return
		// of every waiter is checked (above), the pace by the run without.
		if last > 3*time.Second && !raceEnabled() {
			t.Errorf("the last waiter returned %v after the exit", last)
		}
	})
}

// Wait returns ErrClosed when its handle is closed, and ctx.Err() when its
// context ends, promptly, in both modes, for many waiters at once.
func TestWaitClosedAndCancelled(t *testing.T) {
	const n = 200
	withAndWithoutPidfd(t, func(t *testing.T, o opener) {
		t.Parallel()
		c := startChild(t, "idle")
		var hs []*cputime.Process
		errs := make(chan error, n)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range n {
			h := mustOpenProcessBy(t, o, c.pid())
			hs = append(hs, h)
			wctx := context.Background()
			if i%2 == 1 {
				wctx = ctx
			}
			go func() { errs <- h.Wait(wctx) }()
		}
		time.Sleep(100 * time.Millisecond) // most are in Wait; the others see the closed handle
		for i := 0; i < n; i += 2 {
			hs[i].Close()
		}
		cancel()
		closed, cancelled := 0, 0
		timeout := time.After(5 * time.Second)
		for range n {
			select {
			case err := <-errs:
				switch {
				case errors.Is(err, cputime.ErrClosed):
					closed++
				case errors.Is(err, context.Canceled):
					cancelled++
				default:
					t.Errorf("Wait: %v", err)
				}
			case <-timeout:
				t.Fatalf("after 5 s, %d Waits returned ErrClosed and %d context.Canceled, of %d", closed, cancelled, n)
			}
		}
		if closed != n/2 || cancelled != n/2 {
			t.Errorf("%d Waits returned ErrClosed and %d context.Canceled; want %d each", closed, cancelled, n/2)
		}
		// The handles whose Wait was cancelled still work.
		if tm, err := hs[1].Times(); err != nil || !tm.Exit.IsZero() {
			t.Errorf("after a cancelled Wait: %+v, %v", tm, err)
		}
	})
}

// waitBound is how long TestIdleWaitersManyTasks waits for its waiters
// before it gives up: past its bound under the race detector.
func waitBound() time.Duration {
	if raceEnabled() {
		return 30 * time.Second
	}
	return 3 * time.Second
}

// Reporting exits is not looking for them: the poller's CPU budget (1 % of
// a CPU) paces its sweeps, and the work of recording one exit to each of
// its many handles is done once, however often it looks, so it is not
// counted in that budget. 10,000 waiters on one child that exits, then
// one on a second child that exits once they have all returned: the second
// Wait returns within 2 s of its exit. Counted in, the first sweep's CPU
// would put the next one seconds off.
func TestPollerPaceAfterExits(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 waiters")
	}
	o := cputime.NewEngine(cputime.EngineConfig{NoPidfd: true})
	const n = 10000
	a, b := startChild(t, "idle"), startChild(t, "idle")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan error, n)
	for range n {
		h := mustOpenProcessBy(t, o, a.pid())
		go func() {
			defer h.Close()
			returned <- h.Wait(ctx)
		}()
	}
	hb := mustOpenProcessBy(t, o, b.pid())
	defer hb.Close()
	bDone := make(chan time.Time, 1)
	go func() {
		if err := hb.Wait(ctx); err != nil {
			t.Errorf("Wait on %d: %v", b.pid(), err)
		}
		bDone <- time.Now()
	}()
	a.stop()
	timeout := time.After(60 * time.Second)
	for range n {
		select {
		case err := <-returned:
			if err != nil {
				t.Fatalf("Wait on %d: %v", a.pid(), err)
			}
		case <-timeout:
			t.Fatal("waiters on the first child still blocked 60 s after its exit")
		}
	}
	exited := time.Now()
	b.stdin.Close()
	var late time.Duration
	select {
	case at := <-bDone:
		late = at.Sub(exited)
	case <-time.After(60 * time.Second):
		t.Fatal("the waiter on the second child still blocked 60 s after its exit")
	}
	bound := 2 * time.Second
	if raceEnabled() {
		bound *= 5
	}
	t.Logf("the second child's waiter returned %v after its exit", late)
	if late > bound {
		t.Errorf("the second child's waiter returned %v after its exit, want within %v", late, bound)
	}
}
