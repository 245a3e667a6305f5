package goroutines

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// The engine joins two streams on one clock, the runtime's nanotime
// (CLOCK_MONOTONIC on Linux, monoNow), in ns:
//
//   - from the execution tracer, segments: a goroutine held thread T from a
//     to b (running Go code or in a system call), inside task k;
//   - from the CPU source, pieces: thread T got c ns of CPU between s and e
//     (exact mode: an on-CPU interval, c = e-s; fallback: a clock sample).
//
// A segment's CPU is the sum over the pieces it overlaps of the overlap
// times the piece's rate c/(e-s). Pieces arrive up to a watermark (known):
// the source has told everything before it. Segments are credited up to the
// watermark and pieces dropped once no segment can reach them, so memory
// stays bounded by the live goroutines and threads and by how far one
// stream runs ahead of the other.

type piece struct {
	start, end int64
	cpu        int64
	// occ: shareByRunning mode, once the trace has passed the piece's end:
	// how long goroutines held the thread within it (-1 before that).
	occ int64
}

type segment struct {
	start, end int64
	g          *gor
	task       uint64
	typ        int32 // watching: the innermost task's type (see typeIndex)
}

type thread struct {
	tid      int64
	pieces   []piece
	segs     []segment // closed, not yet fully credited, in time order
	holder   *gor      // the goroutine that holds it now
	total    int64     // CPU in the window from pieces already dropped
	credited int64     // CPU credited to goroutines
	covered  bool      // the CPU source watches it
	goneAt   int64     // the CPU source saw it gone by then (0: not)
	// exitOn: the thread was on a CPU from this time until it exited (its
	// switch-out went with it); 0: it has not exited so. lastSeg: the end of
	// the last segment credited on it.
	exitOn, lastSeg int64
	// gapG was preempted on this thread at gapAt and nothing has held it
	// since: if gapG comes back here, the scheduler's work in between (for
	// a locked goroutine, handing the thread off and back) is gapG's.
	gapG  *gor
	gapAt int64
}

type taskFrame struct {
	id     uint64
	region bool
	typ    int32 // watching: the task's type
}

type gor struct {
	id       uint64
	fn       string
	named    bool // fn came from its creation event (else from a stack, or nothing)
	ran      bool
	cpu      int64
	th       *thread // holding it now, or nil
	segStart int64
	stack    []taskFrame // tasks begun on it and task regions open on it, innermost last
	dead     bool
	gapTh    *thread // the thread it was last preempted on
}

type taskInfo struct {
	id, parent uint64
	typ        string
	cpu        int64
	owner      uint64 // the goroutine that began it
	typIdx     int32  // watching: its type's index
}

type pairKey struct {
	gid, task uint64
}

type engine struct {
	mu       sync.Mutex
	winStart int64
	known    int64 // the CPU source has reported every piece before this
	traceNow int64
	offset   int64 // trace time - monoNow, from the trace's clock snapshots, or from sync events
	threads  map[int64]*thread
	gors     map[uint64]*gor
	tasks    map[uint64]*taskInfo
	pairs    map[pairKey]int64 // CPU per (goroutine, innermost task), for pprof
	names    map[uint64]string // start functions of goroutines that existed at Start
	// counts for Problems
	lost        uint64 // context-switch records the kernel dropped
	uncovered   int64  // CPU-less running time on threads the source did not watch (ns)
	uncoveredTh map[int64]bool
	// threads that exited during the recording with stretches their CPU
	// clock could no longer scale: on-CPU wall time, an upper bound
	exited   int
	unscaled int64
	// shareByRunning: a piece's CPU goes to the goroutines that held the
	// thread within it, in proportion to their running time, each getting
	// at most its running time (the fallback's sampled clocks). Otherwise
	// a piece's rate is its CPU over its length (exact on-CPU intervals,
	// rate 1).
	shareByRunning bool
	// maxEvents: the cap on perf events exact mode keeps (0: the default)
	maxEvents int
	// coarse: the sampled clocks advance in quanta (Windows' clock
	// interrupt), so a piece may hold a quantum more or less than the
	// thread ran in it, and the next piece makes up for it. Its CPU goes
	// to the goroutines that held the thread whole, without the cap at
	// their running time, which would lose every excess and keep every
	// shortfall.
	coarse bool
	// w is set while watching (Watch): CPU is summed per task type, and
	// the state of a goroutine or task is dropped when it ends.
	w *watchState

	// marks: the sync events logged and not yet seen (clocksync.go);
	// synced: one has been seen, and the clock snapshots no longer count.
	marks  []syncMark
	synced bool
}

func newEngine() *engine {
	return &engine{
		threads:     map[int64]*thread{},
		gors:        map[uint64]*gor{},
		tasks:       map[uint64]*taskInfo{},
		pairs:       map[pairKey]int64{},
		uncoveredTh: map[int64]bool{},
	}
}

func (e *engine) thread(tid int64) *thread {
	t := e.threads[tid]
	if t == nil {
		t = &thread{tid: tid}
		e.threads[tid] = t
	}
	return t
}

func (e *engine) gor(id uint64) *gor {
	g := e.gors[id]
	if g == nil {
		g = &gor{id: id}
		e.gors[id] = g
	}
	return g
}

// addPiece: thread tid got cpu ns between start and end. Called by the CPU
// source, with e.mu held, in time order per thread.
func (e *engine) addPiece(tid int64, start, end, cpu int64) {
	if end <= start || cpu <= 0 {
		return
	}
	t := e.thread(tid)
	t.covered = true
	if n := len(t.pieces); n > 0 && t.pieces[n-1].end > start {
		start = t.pieces[n-1].end // never count a stretch twice
		if end <= start {
			return
		}
	}
	t.pieces = append(t.pieces, piece{start, end, cpu, -1})
}

// hold: goroutine g holds thread tid from time at.
func (e *engine) hold(g *gor, tid int64, at int64) {
	t := e.thread(tid)
	if t.holder != nil && t.holder != g {
		e.release(t.holder, at) // the trace lost its end on this thread
	}
	if t.gapG == g && t.holder == nil && t.gapAt < at {
		at = t.gapAt
	}
	t.gapG = nil
	if g.gapTh != nil && g.gapTh.gapG == g {
		g.gapTh.gapG = nil
	}
	g.gapTh = nil
	g.th, g.segStart, g.ran = t, at, true
	t.holder = g
}

// preempted: g, which held a thread until at, is runnable again.
func (e *engine) preempted(g *gor, t *thread, at int64) {
	t.gapG, t.gapAt, g.gapTh = g, at, t
}

// release: goroutine g no longer holds its thread from time at.
func (e *engine) release(g *gor, at int64) {
	t := g.th
	if t == nil {
		return
	}
	if at > g.segStart {
		t.segs = append(t.segs, segment{g.segStart, at, g, g.task(), g.typ()})
	}
	g.th = nil
	if t.holder == g {
		t.holder = nil
	}
}

// cut ends g's current segment at time at and starts the next: its task
// changes there.
func (e *engine) cut(g *gor, at int64) {
	if t := g.th; t != nil {
		e.release(g, at)
		e.hold(g, t.tid, at)
	}
}

func (g *gor) task() uint64 {
	if n := len(g.stack); n > 0 {
		return g.stack[n-1].id
	}
	return 0
}

// typ is the type index of g's innermost task, noTask outside any.
func (g *gor) typ() int32 {
	if n := len(g.stack); n > 0 {
		return g.stack[n-1].typ
	}
	return noTask
}

// advance credits what the watermark allows and drops what nothing can reach.
func (e *engine) advance() {
	for _, t := range e.threads {
		if e.w != nil {
			e.w.splitOpen(e, t)
		}
		e.creditThread(t, e.known)
		low := min(e.known, e.traceNow)
		if e.w != nil && e.w.open {
			// The trace is lost from gapFrom until it resumes: nothing it
			// shows later can reach these stretches, whose CPU is lost
			// (up to where the new stretch of trace begins, which may
			// come after).
			low = e.known
		}
		if t.holder != nil {
			low = min(low, t.holder.segStart)
		}
		if len(t.segs) > 0 {
			low = min(low, t.segs[0].start)
		}
		if t.gapG != nil {
			low = min(low, t.gapAt)
		}
		n := 0
		for n < len(t.pieces) && t.pieces[n].end <= low {
			c := clipped(t.pieces[n], e.winStart, math.MaxInt64)
			if e.w != nil {
				c = e.w.dropped(t.pieces[n], c, e.winStart)
			}
			t.total += c
			n++
		}
		if n > 0 {
			t.pieces = append(t.pieces[:0], t.pieces[n:]...)
		}
		if e.w != nil && t.goneAt != 0 && e.traceNow > t.goneAt && t.holder == nil && len(t.segs) == 0 && len(t.pieces) == 0 && t.gapG == nil {
			delete(e.threads, t.tid)
		}
	}
}

// creditThread credits t's closed segments up to time upTo.
func (e *engine) creditThread(t *thread, upTo int64) {
	if e.shareByRunning {
		upTo = min(upTo, e.settle(t))
	}
	n := 0
	for n < len(t.segs) {
		s := &t.segs[n]
		if s.start >= upTo {
			break
		}
		b := min(s.end, upTo)
		e.credit(t, s.g, s.task, s.typ, s.start, b)
		if s.end > upTo {
			s.start = upTo
			break
		}
		n++
	}
	if n > 0 {
		t.segs = append(t.segs[:0], t.segs[n:]...)
	}
}

// settle finds how long goroutines held t within each piece the trace has
// passed (every segment that overlaps it is known then, closed or the open
// one), and returns the end of the last such piece: crediting stops there.
func (e *engine) settle(t *thread) int64 {
	upTo := int64(math.MinInt64)
	for i := range t.pieces {
		p := &t.pieces[i]
		if p.end > e.traceNow || p.end > e.known {
			break
		}
		if t.gapG != nil && p.end > t.gapAt {
			break // whose the gap is, the thread's next holder will say
		}
		if p.occ < 0 {
			p.occ = 0
			for _, s := range t.segs {
				p.occ += max(0, min(s.end, p.end)-max(s.start, p.start))
			}
			if h := t.holder; h != nil {
				p.occ += max(0, p.end-max(h.segStart, p.start))
			}
		}
		upTo = p.end
	}
	if upTo == math.MinInt64 && len(t.pieces) == 0 {
		return min(e.known, e.traceNow) // nothing to share: nothing is lost by crediting
	}
	return upTo
}

// rate: CPU per ns of a goroutine's running time within piece p.
func (e *engine) rate(p piece) float64 {
	if e.shareByRunning {
		if p.occ <= 0 {
			return 0
		}
		r := float64(p.cpu) / float64(p.occ)
		if e.coarse {
			return r
		}
		return min(1, r)
	}
	return float64(p.cpu) / float64(p.end-p.start)
}

func (e *engine) credit(t *thread, g *gor, task uint64, typ int32, a, b int64) {
	a = max(a, e.winStart)
	if b <= a {
		return
	}
	if !t.covered {
		e.uncovered += b - a
		e.uncoveredTh[t.tid] = true
		return
	}
	var c int64
	// Pieces are in time order and do not overlap: skip to the first that
	// ends after a (a thread keeps a trace period of them).
	i := sort.Search(len(t.pieces), func(i int) bool { return t.pieces[i].end > a })
	for _, p := range t.pieces[i:] {
		if p.start >= b {
			break
		}
		ov := min(p.end, b) - max(p.start, a)
		if p.cpu == p.end-p.start && !e.shareByRunning {
			c += ov
		} else {
			c += int64(float64(ov) * e.rate(p))
		}
	}
	if t.exitOn != 0 && b > t.exitOn {
		c += b - max(a, t.exitOn)
		t.lastSeg = max(t.lastSeg, b)
	}
	if c == 0 {
		return
	}
	g.cpu += c
	t.credited += c
	if e.w != nil {
		e.w.add(typ, c)
	} else {
		e.pairs[pairKey{g.id, task}] += c
	}
	for depth, id := 0, task; id != 0 && depth < 64; depth++ {
		k := e.tasks[id]
		if k == nil {
			break
		}
		k.cpu += c
		id = k.parent
	}
}

func clipped(p piece, lo, hi int64) int64 {
	a, b := max(p.start, lo), min(p.end, hi)
	if b <= a {
		return 0
	}
	if p.cpu == p.end-p.start {
		return b - a
	}
	return int64(float64(b-a) * float64(p.cpu) / float64(p.end-p.start))
}

const unknownFunction = "unknown (started before the recording)"

// finish closes what is still open at end and builds the Profile.
func (e *engine) finish(end int64, traceErr error) *Profile {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.gors {
		if g.th != nil {
			e.release(g, end)
		}
	}
	for _, t := range e.threads {
		t.gapG = nil // nobody came back: the gaps are the runtime's
	}
	e.known, e.traceNow = end, end
	p := &Profile{}
	var threadsTotal, goroutinesTotal int64
	for _, t := range e.threads {
		e.creditThread(t, end)
		for _, pc := range t.pieces {
			t.total += clipped(pc, e.winStart, end)
		}
		t.pieces = nil
		if t.exitOn != 0 && t.lastSeg > t.exitOn {
			x := clipped(piece{t.exitOn, t.lastSeg, t.lastSeg - t.exitOn, -1}, e.winStart, end)
			t.total += x
			e.unscaled += x
		}
		// Pieces dropped earlier were clipped at the start only: none
		// reaches past the watermark, which never passes end.
		if t.total > 0 || t.credited > 0 {
			p.Threads = append(p.Threads, Thread{TID: t.tid, CPU: time.Duration(t.total), Goroutines: time.Duration(t.credited)})
			threadsTotal += t.total
			goroutinesTotal += t.credited
		}
	}
	p.Runtime = time.Duration(max(threadsTotal-goroutinesTotal, 0))
	for _, g := range e.gors {
		if !g.ran {
			continue
		}
		// Its creation's start PC; else runtime.Stack's outermost frame at
		// Start; else the outermost frame of its stack in the trace.
		fn := g.fn
		if !g.named {
			if n, ok := e.names[g.id]; ok {
				fn = n
			} else if fn == "" {
				fn = unknownFunction
			}
		}
		p.Goroutines = append(p.Goroutines, Goroutine{ID: g.id, Function: fn, CPU: time.Duration(g.cpu)})
	}
	for _, k := range e.tasks {
		p.Tasks = append(p.Tasks, Task{ID: k.id, Parent: k.parent, Type: k.typ, CPU: time.Duration(k.cpu)})
	}
	sortProfile(p)
	p.pairs = e.pairs
	p.fn = map[uint64]string{}
	for _, g := range p.Goroutines {
		p.fn[g.ID] = g.Function
	}
	p.taskType = map[uint64]string{}
	for _, k := range p.Tasks {
		p.taskType[k.ID] = k.Type
	}
	if e.lost > 0 {
		p.Problems = append(p.Problems, fmt.Sprintf("the kernel dropped %d context-switch records (its buffer was full): some goroutines' CPU is missing or counted from the wrong interval", e.lost))
	}
	if e.uncovered > 0 {
		p.Problems = append(p.Problems, fmt.Sprintf("%d threads ran goroutines for %v without a CPU source watching them: that time counts as no CPU", len(e.uncoveredTh), time.Duration(e.uncovered)))
	}
	if e.exited > 0 && e.unscaled > 0 {
		p.Problems = append(p.Problems, fmt.Sprintf("%d threads exited during the recording: their last %v count as on-CPU wall time, not scaled to their CPU clocks, so they may be high by the steal and interrupt time in them", e.exited, time.Duration(e.unscaled).Round(time.Microsecond)))
	}
	if traceErr != nil {
		p.Problems = append(p.Problems, fmt.Sprintf("the execution trace could not be read to its end (%v): goroutines that ran after that point have no CPU", traceErr))
	}
	return p
}
