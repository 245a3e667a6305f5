package goroutines

import (
	"hash/maphash"
	"math"
)

// Type indexes of the CPU a Watcher sums: a task type's index into
// watchState.types, or one of these.
const (
	noTask   int32 = -1 // outside any task, or in a task whose type the trace did not show
	overflow int32 = -2 // a type past the limit
)

// maxOverflowNames bounds the set that counts distinct overflowed types:
// past it the count saturates (Snapshot.OverflowTypesSaturated).
const maxOverflowNames = 1 << 16

// Unattributed CPU, by reason: the keys of Snapshot.Unattributed.
const (
	// ReasonTraceLost: CPU while the trace generations that would say who
	// ran were lost (the flight recorder dropped them before a snapshot
	// took them, or they could not be parsed).
	ReasonTraceLost = "trace_lost"
	// ReasonUnwatchedThread: running time of goroutines on threads the CPU
	// source did not watch, counted as their wall time.
	ReasonUnwatchedThread = "unwatched_thread"
)

type typeStat struct {
	name  string
	cpu   int64
	ended uint64
}

// watchState is what a Watcher sums, under engine.mu.
type watchState struct {
	maxTypes  int
	index     map[string]int32
	types     []typeStat
	over      typeStat
	overNames map[uint64]struct{}
	seed      maphash.Seed
	noTask    int64
	credited  int64 // all CPU credited to goroutines
	drop      int64 // all CPU of thread stretches the engine is done with, gaps aside
	runtime   int64 // the last Runtime reported: it only grows
	// gaps are the stretches (CLOCK_MONOTONIC) the trace lost; open: one
	// began at gapFrom and the trace has not resumed yet.
	gaps    [][2]int64
	open    bool
	gapFrom int64
	lostCPU int64
	lostGen uint64
	// lastTask is the highest task id the trace showed begin: ids grow.
	lastTask uint64
}

func newWatchState(maxTypes int) *watchState {
	return &watchState{maxTypes: maxTypes, index: map[string]int32{}, overNames: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
}

func (w *watchState) typeIndex(name string) int32 {
	if i, ok := w.index[name]; ok {
		return i
	}
	if len(w.types) >= w.maxTypes {
		if len(w.overNames) < maxOverflowNames {
			w.overNames[maphash.String(w.seed, name)] = struct{}{}
		}
		return overflow
	}
	i := int32(len(w.types))
	w.types = append(w.types, typeStat{name: name})
	w.index[name] = i
	return i
}

func (w *watchState) stat(typ int32) *typeStat {
	switch {
	case typ >= 0:
		return &w.types[typ]
	case typ == overflow:
		return &w.over
	}
	return nil
}

func (w *watchState) add(typ int32, c int64) {
	w.credited += c
	if s := w.stat(typ); s != nil {
		s.cpu += c
	} else {
		w.noTask += c
	}
}

// ended counts a task's end for its type: ti is its state if the trace
// showed its begin, else the type comes from the end event (if it says).
func (w *watchState) ended(ti *taskInfo, typ string) {
	i := noTask
	switch {
	case ti != nil:
		i = ti.typIdx
	case typ != "":
		i = w.typeIndex(typ)
	}
	if s := w.stat(i); s != nil {
		s.ended++
	}
}

// splitOpen credits the running goroutine on t up to what both streams
// have passed, so a goroutine that holds its thread long (a long system
// call, a locked thread) neither keeps the thread's stretches in memory
// nor holds its CPU back from the counters.
func (w *watchState) splitOpen(e *engine, t *thread) {
	g := t.holder
	if g == nil {
		return
	}
	upTo := min(e.known, e.traceNow)
	if upTo <= g.segStart {
		return
	}
	t.segs = append(t.segs, segment{g.segStart, upTo, g, g.task(), g.typ()})
	g.segStart = upTo
}

// dropped takes a stretch the engine is done with, whose CPU after winStart
// is c: the part inside a lost stretch of the trace is unattributed, the
// rest is returned (and summed for Runtime).
func (w *watchState) dropped(p piece, c, winStart int64) int64 {
	var lost int64
	for _, gp := range w.gaps {
		lost += clipped(p, max(gp[0], winStart), gp[1])
	}
	if w.open {
		lost += clipped(p, max(w.gapFrom, winStart), math.MaxInt64)
	}
	lost = min(lost, c)
	w.lostCPU += lost
	w.drop += c - lost
	return c - lost
}

// traceLost: the trace stops at its last event and resumes later, lost
// generations in between (0: how many is not known). Whatever it showed
// running is released there; goroutines' tasks are forgotten, as the new
// stretch of trace starts without them.
func (e *engine) traceLost(gens uint64) {
	w := e.w
	w.lostGen += gens
	if w.open {
		return
	}
	at := e.traceNow
	for _, t := range e.threads {
		if t.holder != nil {
			e.release(t.holder, at)
		}
		t.gapG = nil
	}
	e.gors = map[uint64]*gor{}
	e.tasks = map[uint64]*taskInfo{}
	w.open, w.gapFrom = true, at
}

// traceResumed: the first event after a loss is at time at.
func (e *engine) traceResumed(at int64) {
	w := e.w
	if !w.open || at <= w.gapFrom {
		return
	}
	w.open = false
	w.gaps = append(w.gaps, [2]int64{w.gapFrom, at})
	// Stretches older than every thread's oldest kept piece are done with.
	low := e.known
	for _, t := range e.threads {
		if len(t.pieces) > 0 {
			low = min(low, t.pieces[0].start)
		}
	}
	n := 0
	for _, gp := range w.gaps {
		if gp[1] > low {
			w.gaps[n] = gp
			n++
		}
	}
	w.gaps = w.gaps[:n]
}
