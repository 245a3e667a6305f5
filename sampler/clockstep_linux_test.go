package sampler_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/engine"
	"github.com/cputime/cputime/sampler"
)

// steppedClocks are the system's clocks with CLOCK_REALTIME stepped by
// step (an account.Source): a wall-clock step as the library sees one,
// without touching the system's clock.
type steppedClocks struct {
	base time.Time
	step atomic.Int64
}

func (c *steppedClocks) Now() (wall, mono int64) {
	t := time.Now()
	return t.UnixNano() + c.step.Load(), int64(t.Sub(c.base))
}

func (c *steppedClocks) Boottime() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return ts.Nano()
}

// TestCreationThroughClockStep: the wall clock is stepped by an hour (the
// clocks of an engine of the test's: steppedClocks). A handle opened
// before, a one-shot, and the sampler (its idle threads included, which it
// does not read again), all over that engine, give every task the same
// creation time, before the step and after it, where all have moved by the
// step.
func TestCreationThroughClockStep(t *testing.T) {
	t.Parallel()
	src := &steppedClocks{base: time.Now()}
	clocks := account.NewClocks(src)
	eng := engine.New(engine.Config{Clocks: clocks})
	c := startChild(t, "idle 3")
	c.line(t)
	s, err := sampler.NewWithEngine(sampler.Options{PIDs: []int{c.pid}, Threads: true}, eng)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ph, err := eng.OpenProcess(c.pid, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ph.Close()
	x := refresh(t, s)
	refresh(t, s) // the threads are idle from now on: not read again
	var tids []int
	handles := map[int]*engine.Thread{}
	for _, th := range x.Threads {
		h, err := eng.OpenThread(th.TID, false)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		handles[th.TID] = h
		tids = append(tids, th.TID)
	}
	// every path's creation of every task, which must agree
	paths := func(when string) map[int]time.Time {
		got := map[int]time.Time{}
		agree := func(id int, what string, c time.Time, err error) {
			if err != nil {
				t.Fatalf("%s: %s of %d: %v", when, what, id, err)
			}
			if prev, ok := got[id]; ok && !prev.Equal(c) {
				t.Errorf("%s: %s says task %d was created at %v, another path %v", when, what, id, c, prev)
			}
			got[id] = c
		}
		x := refresh(t, s)
		p, ok := findTask(x.Processes, c.pid, 0)
		if !ok {
			t.Fatalf("%s: the process is missing", when)
		}
		agree(-c.pid, "the sampler", p.Times.Creation, nil)
		pt, err := ph.Times()
		agree(-c.pid, "a process handle", pt.Creation, err)
		pt, err = eng.ProcessTimes(c.pid)
		agree(-c.pid, "ProcessTimes", pt.Creation, err)
		for _, tid := range tids {
			th, ok := findTask(x.Threads, c.pid, tid)
			if !ok {
				t.Fatalf("%s: thread %d is missing", when, tid)
			}
			agree(tid, "the sampler", th.Times.Creation, nil)
			tt, err := handles[tid].Times()
			agree(tid, "a thread handle", tt.Creation, err)
			tt, err = eng.ThreadTimes(tid)
			agree(tid, "ThreadTimes", tt.Creation, err)
		}
		return got
	}
	// A process that exited before the step, through its handle: its
	// record's creation and exit move together.
	gone := startChild(t, "idle 0")
	gone.line(t)
	gh, err := eng.OpenProcess(gone.pid, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer gh.Close()
	gone.stdin.Close()
	if err := gh.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	gt0, err := gh.Times()
	if err != nil {
		t.Fatal(err)
	}

	before := paths("before the step")
	src.step.Store(int64(time.Hour))
	clocks.BootOffset() // notices the step, confirms it with two readings
	after := paths("after the step")
	gt1, err := gh.Times()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{gt1.Creation.Sub(gt0.Creation), gt1.Exit.Sub(gt0.Exit)} {
		if d -= time.Hour; d > 100*time.Microsecond || d < -100*time.Microsecond {
			t.Errorf("exited process: created %v, exited %v before the step; %v, %v after", gt0.Creation, gt0.Exit, gt1.Creation, gt1.Exit)
		}
	}
	if tm, err := eng.ProcessTimes(gone.pid); err == nil && !tm.Creation.Equal(gt1.Creation) {
		t.Errorf("exited process: its handle says created %v, ProcessTimes %v", gt1.Creation, tm.Creation)
	}
	for id, b := range before {
		// The new offset is a new reading: within its error of the step.
		if d := after[id].Sub(b) - time.Hour; d > 100*time.Microsecond || d < -100*time.Microsecond {
			t.Errorf("task %d: created %v before the step, %v after (moved %v, the step 1h)", id, b, after[id], after[id].Sub(b))
		}
	}
}
