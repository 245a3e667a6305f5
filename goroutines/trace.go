package goroutines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	xtrace "golang.org/x/exp/trace"
)

// apply credits a batch of parsed events, under the engine's lock, and
// moves the engine's time on past them.
func (e *engine) apply(evs []xtrace.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range evs {
		e.event(ev)
	}
	e.advance()
}

// readTrace parses the execution trace as the runtime writes it and feeds
// the engine, one generation (about a second of trace) at a time.
func (e *engine) readTrace(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	rd, err := xtrace.NewReader(br)
	if err != nil {
		io.Copy(io.Discard, br) // never block the runtime's trace writer
		return fmt.Errorf("reading the execution trace's header: %w", err)
	}
	const batch = 256
	evs := make([]xtrace.Event, 0, batch)
	flush := func() {
		e.apply(evs)
		clear(evs)
		evs = evs[:0]
	}
	for {
		ev, err := rd.ReadEvent()
		if err != nil {
			flush()
			if errors.Is(err, io.EOF) {
				return nil
			}
			io.Copy(io.Discard, br)
			return err
		}
		evs = append(evs, ev)
		if len(evs) == batch {
			flush()
		}
	}
}

// event applies one trace event. e.mu is held.
func (e *engine) event(ev xtrace.Event) {
	at := int64(ev.Time()) - e.offset
	if len(e.marks) > 0 && !e.synced {
		// Before the first sync event, which the source logs before the
		// window opens: the offset may be none yet (a trace whose first
		// generation has no clock snapshot), or the coarse clock's.
		at = min(at, e.winStart)
	}
	if e.w != nil && e.w.open {
		e.traceResumed(at)
	}
	if at > e.traceNow {
		e.traceNow = at
	}
	switch ev.Kind() {
	case xtrace.EventSync:
		if cs := ev.Sync().ClockSnapshot; cs != nil && !e.synced {
			e.offset = int64(cs.Trace) - int64(cs.Mono)
		}
	case xtrace.EventLog:
		if len(e.marks) > 0 {
			if l := ev.Log(); l.Category == syncCategory {
				e.syncSeen(l.Message, int64(ev.Time()))
			}
		}
	case xtrace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind != xtrace.ResourceGoroutine {
			return
		}
		from, to := st.Goroutine()
		g := e.gor(uint64(st.Resource.Goroutine()))
		if !g.named && e.w == nil {
			switch from {
			case xtrace.GoNotExist: // created: the transition's stack is the start PC
				for f := range st.Stack.Frames() {
					g.fn, g.named = f.Func, true
					break
				}
			case xtrace.GoUndetermined:
				// There before the trace: its stack ends at its start
				// function, unless the tracer cut a deep stack short, so
				// runtime.Stack's name (see finish) goes first.
				for f := range st.Stack.Frames() {
					g.fn = f.Func
				}
			}
		}
		holds := to == xtrace.GoRunning || to == xtrace.GoSyscall
		switch {
		case holds && g.th == nil:
			if tid := ev.Thread(); tid != xtrace.NoThread {
				e.hold(g, int64(tid), at)
			}
		case holds && ev.Thread() != xtrace.NoThread && int64(ev.Thread()) != g.th.tid:
			e.release(g, at)
			e.hold(g, int64(ev.Thread()), at)
		case !holds && g.th != nil:
			t := g.th
			e.release(g, at)
			if to == xtrace.GoRunnable {
				e.preempted(g, t, at)
			}
		}
		if to == xtrace.GoNotExist {
			g.stack, g.dead = nil, true
			if e.w != nil { // nothing refers to it by id again; its segments hold it
				delete(e.gors, g.id)
			}
		}
	case xtrace.EventTaskBegin:
		k := ev.Task()
		ti := e.tasks[uint64(k.ID)]
		if ti == nil {
			ti = &taskInfo{id: uint64(k.ID)}
			e.tasks[ti.id] = ti
		}
		if k.Parent != xtrace.NoTask {
			ti.parent = uint64(k.Parent)
		}
		ti.typ = k.Type
		ti.typIdx = noTask
		if e.w != nil {
			ti.typIdx = e.w.typeIndex(k.Type)
			e.w.lastTask = max(e.w.lastTask, ti.id)
		}
		if gid := ev.Goroutine(); gid != xtrace.NoGoroutine {
			g := e.gor(uint64(gid))
			ti.owner = g.id
			e.cut(g, at)
			g.stack = append(g.stack, taskFrame{id: ti.id, typ: ti.typIdx})
		}
	case xtrace.EventTaskEnd:
		k := ev.Task()
		ti := e.tasks[uint64(k.ID)]
		if e.w != nil {
			e.w.ended(ti, k.Type)
		}
		if ti == nil { // began before Start
			if e.w != nil {
				return
			}
			ti = &taskInfo{id: uint64(k.ID), typ: k.Type}
			if k.Parent != xtrace.NoTask {
				ti.parent = uint64(k.Parent)
			}
			e.tasks[ti.id] = ti
			return
		}
		if g := e.gors[ti.owner]; g != nil && !g.dead {
			for i := len(g.stack) - 1; i >= 0; i-- {
				if f := g.stack[i]; f.id == ti.id && !f.region {
					e.cut(g, at)
					g.stack = append(g.stack[:i], g.stack[i+1:]...)
					break
				}
			}
		}
		if e.w != nil {
			delete(e.tasks, ti.id)
		}
	case xtrace.EventRegionBegin, xtrace.EventRegionEnd:
		r := ev.Region()
		gid := ev.Goroutine()
		if r.Task == xtrace.BackgroundTask || r.Task == xtrace.NoTask || gid == xtrace.NoGoroutine {
			return
		}
		g := e.gor(uint64(gid))
		if ev.Kind() == xtrace.EventRegionBegin {
			ti := e.tasks[uint64(r.Task)]
			if ti == nil { // its task began before Start (or, watching, ended)
				ti = &taskInfo{id: uint64(r.Task), typIdx: noTask}
				if e.w == nil {
					e.tasks[ti.id] = ti
				}
			}
			e.cut(g, at)
			g.stack = append(g.stack, taskFrame{id: ti.id, region: true, typ: ti.typIdx})
			return
		}
		for i := len(g.stack) - 1; i >= 0; i-- {
			if f := g.stack[i]; f.id == uint64(r.Task) && f.region {
				e.cut(g, at)
				g.stack = append(g.stack[:i], g.stack[i+1:]...)
				break
			}
		}
	}
}

// stackNames names the goroutines that exist now by their start function:
// the last frame runtime.Stack prints before "created by". The trace names
// the goroutines created later, and those it sees blocked.
func stackNames() map[uint64]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return parseStacks(string(buf))
}

// parseStacks reads runtime.Stack(_, true) output.
func parseStacks(s string) map[uint64]string {
	names := map[uint64]string{}
	for _, block := range strings.Split(s, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		f := strings.Fields(lines[0])
		if len(f) < 2 {
			continue
		}
		id, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		last := ""
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "created by ") {
				break
			}
			// "...N frames elided..." stands for the middle of a deep
			// stack: the outermost frames follow it.
			if strings.HasPrefix(l, "\t") || l == "" || strings.HasPrefix(l, "...") {
				continue
			}
			last = l
		}
		if i := strings.LastIndexByte(last, '('); i > 0 {
			last = last[:i]
		}
		if last != "" {
			names[id] = last
		}
	}
	return names
}
