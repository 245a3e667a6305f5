package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cputime/cputime/internal/account"
)

// exitState is the exit of a handle's task, recorded once by whoever
// observes it first: the exit watcher, a query, or Wait.
type exitState struct {
	rec atomic.Pointer[Times] // the times reported from then on, Exit set
	off int64                 // the boot offset when rec was stored
	// clocks date the exit, and date it anew after a clock step.
	clocks *account.Clocks
	// exact says rec's times were read after the exit (a process's
	// zombie), not the last ones seen before it; set before rec is stored.
	exact bool
	once  sync.Once
	done  chan struct{} // closed when rec is set
}

func (e *exitState) init(clocks *account.Clocks) {
	e.done = make(chan struct{})
	e.clocks = clocks
}

// final returns the recorded exit, if any. Its creation and exit are dated
// anew with the clocks of the query, as every path dates a live task
// (Linux: a clock step since the exit moves both by the step).
func (e *exitState) final() (Times, bool) {
	if r := e.rec.Load(); r != nil {
		t := *r
		if d := time.Duration(e.clocks.BootOffset() - e.off); d != 0 {
			t.Creation, t.Exit = t.Creation.Add(d), t.Exit.Add(d)
		}
		return t, true
	}
	return Times{}, false
}

// finalExact reports whether the exit is recorded with times read after
// it.
func (e *exitState) finalExact() bool { return e.rec.Load() != nil && e.exact }

// exitAt is an exit time and how it was learned.
type exitAt struct {
	at  time.Time
	src ExitSource
}

// observedNow is an exit seen as it happens.
func observedAt(at time.Time) exitAt { return exitAt{at, ExitObserved} }

// record stores the exit, unless one was stored already, and returns the
// one that stands. at is when the exit happened; t, the final times, exact
// if read after the exit.
func (e *exitState) record(at exitAt, t Times, exact bool) Times {
	e.once.Do(func() {
		rec := withExit(t, at)
		e.off, e.exact = e.clocks.BootOffset(), exact
		e.rec.Store(&rec)
		close(e.done)
	})
	final, _ := e.final()
	return final
}

// withExit returns t with the exit at, never before the creation.
func withExit(t Times, at exitAt) Times {
	t.Exit, t.ExitSource = at.at.Round(0), at.src
	if t.Exit.Before(t.Creation) {
		t.Exit = t.Creation
	}
	return t
}
