package timeline

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cputime/cputime/internal/names"
)

// ErrInvalidRecording is returned, wrapped with what was wrong, for a
// Recording the writers cannot draw truthfully: a nil recording, an exit
// before its creation, a missing creation time, negative CPU times, samples
// out of order or a recording that ends before it starts.
var ErrInvalidRecording = errors.New("invalid recording")

// plan is a validated Recording in drawing order, shared by every writer so
// the trace and the pictures agree on order, bounds and identities.
type plan struct {
	rec *Recording
	// origin and end bound what is drawn: the earlier of Recording.Start
	// and the first creation, and the later of Recording.End and the last
	// instant the recording holds (an exit, a creation, a sample).
	// Creation times come from the kernel's tick-granular start times, so a
	// task can appear to start a few milliseconds before Recording.Start.
	origin, end time.Time
	procs       []planProc // tree order: each process followed by its descendants
	threads     int
}

type planProc struct {
	p     *Process
	index int // in Recording.Processes
	// creation is Process.Creation, or inferred if that is zero
	// (creationUnknown; see prepare).
	creation        time.Time
	creationUnknown bool
	depth           int // 0 for a root of the tree
	running         bool
	end             time.Time // Exit, or plan.end if still running
	threads         []planThread
	// traceID is the pid used in the trace file: Process.ID unless an
	// earlier process of the recording had the same ID (a reused pid).
	traceID int
}

type planThread struct {
	t               *Thread
	index           int // in Process.Threads
	creation        time.Time
	creationUnknown bool
	running         bool
	end             time.Time
	traceID         int // the tid used in the trace file (see planProc.traceID)
}

// syntheticIDBase is above any Linux pid or tid (PID_MAX_LIMIT is 2^22) and
// below Windows' usual ranges' top; the trace gives a reused pid or tid an
// ID from here, so two tasks never share a track. The real ID stays in args.
const syntheticIDBase = 1 << 22

func invalid(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrInvalidRecording)
}

// prepare validates r and puts it in drawing order.
//
// A task without a creation time (a recorder can miss a fork record) is
// drawn from the best instant known before it, and flagged: a thread from
// its process's creation, a process from its first thread's creation, else
// from Recording.Start. A recording where even that is missing is invalid.
func prepare(r *Recording) (*plan, error) {
	if r == nil {
		return nil, invalid("nil recording")
	}
	if !r.End.IsZero() && !r.Start.IsZero() && r.End.Before(r.Start) {
		return nil, invalid("recording ends (%s) before it starts (%s)", r.End.Format(time.RFC3339Nano), r.Start.Format(time.RFC3339Nano))
	}
	pl := &plan{rec: r, origin: r.Start, end: r.End}
	earlier := func(t time.Time) {
		if !t.IsZero() && (pl.origin.IsZero() || t.Before(pl.origin)) {
			pl.origin = t
		}
	}
	later := func(t time.Time) {
		if !t.IsZero() && t.After(pl.end) {
			pl.end = t
		}
	}
	// Effective creation times: the recorded one, or an inferred one.
	pc := make([]time.Time, len(r.Processes))
	tc := make([][]time.Time, len(r.Processes))
	for i := range r.Processes {
		p := &r.Processes[i]
		if err := checkSpan(p.Creation, p.Exit, p.User, p.Kernel); err != nil {
			return nil, fmt.Errorf("process %d: %w", p.ID, err)
		}
		tc[i] = make([]time.Time, len(p.Threads))
		for j := range p.Threads {
			t := &p.Threads[j]
			if err := checkSpan(t.Creation, t.Exit, t.User, t.Kernel); err != nil {
				return nil, fmt.Errorf("thread %d of process %d: %w", t.ID, p.ID, err)
			}
			if err := checkSamples(t.Samples); err != nil {
				return nil, fmt.Errorf("thread %d of process %d: %w", t.ID, p.ID, err)
			}
			tc[i][j] = t.Creation
			if !t.Creation.IsZero() && (pc[i].IsZero() || t.Creation.Before(pc[i])) {
				pc[i] = t.Creation
			}
		}
		if !p.Creation.IsZero() {
			pc[i] = p.Creation
		}
		if pc[i].IsZero() {
			pc[i] = r.Start
		}
		if pc[i].IsZero() {
			return nil, invalid("process %d: no creation time, and none for its threads or the recording", p.ID)
		}
		for j, t := range p.Threads {
			if tc[i][j].IsZero() {
				tc[i][j] = pc[i]
			}
			// An inferred creation must not come after what is known.
			if !t.Exit.IsZero() && t.Exit.Before(tc[i][j]) {
				tc[i][j] = t.Exit
			}
			earlier(tc[i][j])
			later(tc[i][j])
			later(t.Exit)
			for _, s := range t.Samples {
				earlier(s.At)
				later(s.At)
			}
		}
		if !p.Exit.IsZero() && p.Exit.Before(pc[i]) {
			pc[i] = p.Exit
		}
		earlier(pc[i])
		later(pc[i])
		later(p.Exit)
	}
	if pl.end.IsZero() || pl.end.Before(pl.origin) {
		pl.end = pl.origin
	}

	order, depth := treeOrder(r.Processes, pc)
	pl.procs = make([]planProc, 0, len(order))
	usedPID := map[int]bool{}
	usedTID := map[int]bool{}
	next := syntheticIDBase
	unique := func(id int, used map[int]bool) int {
		if id > 0 && !used[id] {
			used[id] = true
			return id
		}
		for used[next] {
			next++
		}
		used[next] = true
		return next
	}
	for _, i := range order {
		p := &r.Processes[i]
		pp := planProc{p: p, index: i, depth: depth[i], creation: pc[i], creationUnknown: p.Creation.IsZero(),
			running: p.Exit.IsZero(), end: p.Exit, traceID: unique(p.ID, usedPID)}
		if pp.running {
			pp.end = pl.end
		}
		idx := make([]int, len(p.Threads))
		for j := range idx {
			idx[j] = j
		}
		// Threads by creation, the main thread (ID == pid) first among equals.
		slices.SortStableFunc(idx, func(a, b int) int {
			if c := tc[i][a].Compare(tc[i][b]); c != 0 {
				return c
			}
			ma, mb := p.Threads[a].ID == p.ID, p.Threads[b].ID == p.ID
			switch {
			case ma && !mb:
				return -1
			case mb && !ma:
				return 1
			}
			return 0
		})
		for _, j := range idx {
			t := &p.Threads[j]
			pt := planThread{t: t, index: j, creation: tc[i][j], creationUnknown: t.Creation.IsZero(),
				running: t.Exit.IsZero(), end: t.Exit, traceID: unique(t.ID, usedTID)}
			if pt.running {
				pt.end = pl.end
			}
			pp.threads = append(pp.threads, pt)
		}
		pl.threads += len(p.Threads)
		pl.procs = append(pl.procs, pp)
	}
	return pl, nil
}

// checkSpan checks a task's own figures; a zero creation is allowed (see
// prepare), an exit before a known creation is not.
func checkSpan(creation, exit time.Time, user, kernel time.Duration) error {
	if !exit.IsZero() && !creation.IsZero() && exit.Before(creation) {
		return invalid("exit %s before creation %s", exit.Format(time.RFC3339Nano), creation.Format(time.RFC3339Nano))
	}
	if user < 0 || kernel < 0 {
		return invalid("negative CPU time (user %v, kernel %v)", user, kernel)
	}
	return nil
}

// checkSamples: samples in time order (two at one instant are allowed),
// cumulative CPU never decreasing.
func checkSamples(ss []Sample) error {
	for k, s := range ss {
		if s.At.IsZero() {
			return invalid("sample %d has no time", k)
		}
		if s.CPU < 0 {
			return invalid("sample %d has negative CPU time %v", k, s.CPU)
		}
		if k == 0 {
			continue
		}
		prev := ss[k-1]
		if s.At.Before(prev.At) {
			return invalid("sample %d is earlier than sample %d", k, k-1)
		}
		if s.CPU < prev.CPU {
			return invalid("CPU time decreases from %v to %v at sample %d", prev.CPU, s.CPU, k)
		}
	}
	return nil
}

// treeOrder returns the indexes of ps in depth-first tree order (children
// by creation, as given for each process) and each one's depth. A process's parent is the latest
// process with its Parent ID created no later than it (pids are reused);
// processes whose parent is not in the recording are roots, and so is any
// process caught in a parent cycle (which only corrupt input can make).
func treeOrder(ps []Process, creation []time.Time) (order, depth []int) {
	byID := map[int][]int{}
	for i := range ps {
		byID[ps[i].ID] = append(byID[ps[i].ID], i)
	}
	parent := make([]int, len(ps))
	for i := range ps {
		parent[i] = -1
		if ps[i].Parent == 0 {
			continue
		}
		for _, c := range byID[ps[i].Parent] {
			if c == i || creation[c].After(creation[i]) {
				continue
			}
			if parent[i] < 0 || creation[c].After(creation[parent[i]]) {
				parent[i] = c
			}
		}
	}
	children := make([][]int, len(ps))
	var roots []int
	for i := range ps {
		if parent[i] < 0 {
			roots = append(roots, i)
		} else {
			children[parent[i]] = append(children[parent[i]], i)
		}
	}
	byCreation := func(a, b int) int {
		if c := creation[a].Compare(creation[b]); c != 0 {
			return c
		}
		return a - b
	}
	depth = make([]int, len(ps))
	seen := make([]bool, len(ps))
	var walk func(i, d int)
	walk = func(i, d int) {
		if seen[i] {
			return
		}
		seen[i] = true
		depth[i] = d
		order = append(order, i)
		slices.SortFunc(children[i], byCreation)
		for _, c := range children[i] {
			walk(c, d+1)
		}
	}
	slices.SortFunc(roots, byCreation)
	for _, i := range roots {
		walk(i, 0)
	}
	// A parent cycle leaves its members unreached: draw them as roots.
	for i := range ps {
		if !seen[i] {
			walk(i, 0)
		}
	}
	return order, depth
}

// sanitize makes a task name safe to show, the way ps prints names (see
// package names); markup characters are left to the writer's escaping.
func sanitize(name string) string { return names.Sanitize(name) }

// truncate shortens s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}
