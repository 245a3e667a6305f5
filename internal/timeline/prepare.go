package timeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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
	p       *Process
	index   int // in Recording.Processes
	depth   int // 0 for a root of the tree
	running bool
	end     time.Time // Exit, or plan.end if still running
	threads []planThread
	// traceID is the pid used in the trace file: Process.ID unless an
	// earlier process of the recording had the same ID (a reused pid).
	traceID int
}

type planThread struct {
	t       *Thread
	index   int // in Process.Threads
	running bool
	end     time.Time
	traceID int // the tid used in the trace file (see planProc.traceID)
}

// syntheticIDBase is above any Linux pid or tid (PID_MAX_LIMIT is 2^22) and
// below Windows' usual ranges' top; the trace gives a reused pid or tid an
// ID from here, so two tasks never share a track. The real ID stays in args.
const syntheticIDBase = 1 << 22

func invalid(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrInvalidRecording)
}

// prepare validates r and puts it in drawing order.
func prepare(r *Recording) (*plan, error) {
	if r == nil {
		return nil, invalid("nil recording")
	}
	if !r.End.IsZero() && !r.Start.IsZero() && r.End.Before(r.Start) {
		return nil, invalid("recording ends (%s) before it starts (%s)", r.End.Format(time.RFC3339Nano), r.Start.Format(time.RFC3339Nano))
	}
	pl := &plan{rec: r, origin: r.Start, end: r.End}
	earlier := func(t time.Time) {
		if pl.origin.IsZero() || t.Before(pl.origin) {
			pl.origin = t
		}
	}
	later := func(t time.Time) {
		if !t.IsZero() && t.After(pl.end) {
			pl.end = t
		}
	}
	for i := range r.Processes {
		p := &r.Processes[i]
		if err := checkSpan(p.Creation, p.Exit, p.User, p.Kernel); err != nil {
			return nil, fmt.Errorf("process %d: %w", p.ID, err)
		}
		earlier(p.Creation)
		later(p.Creation)
		later(p.Exit)
		for j := range p.Threads {
			t := &p.Threads[j]
			if err := checkSpan(t.Creation, t.Exit, t.User, t.Kernel); err != nil {
				return nil, fmt.Errorf("thread %d of process %d: %w", t.ID, p.ID, err)
			}
			for k, s := range t.Samples {
				if s.At.IsZero() {
					return nil, fmt.Errorf("thread %d of process %d: sample %d has no time: %w", t.ID, p.ID, k, ErrInvalidRecording)
				}
				if s.CPU < 0 {
					return nil, fmt.Errorf("thread %d of process %d: sample %d has negative CPU time %v: %w", t.ID, p.ID, k, s.CPU, ErrInvalidRecording)
				}
				if k > 0 {
					prev := t.Samples[k-1]
					if !s.At.After(prev.At) {
						return nil, fmt.Errorf("thread %d of process %d: sample %d is not after sample %d: %w", t.ID, p.ID, k, k-1, ErrInvalidRecording)
					}
					if s.CPU < prev.CPU {
						return nil, fmt.Errorf("thread %d of process %d: CPU time decreases from %v to %v at sample %d: %w", t.ID, p.ID, prev.CPU, s.CPU, k, ErrInvalidRecording)
					}
				}
				earlier(s.At)
				later(s.At)
			}
			earlier(t.Creation)
			later(t.Creation)
			later(t.Exit)
		}
	}
	if pl.end.IsZero() || pl.end.Before(pl.origin) {
		pl.end = pl.origin
	}

	order, depth := treeOrder(r.Processes)
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
		pp := planProc{p: p, index: i, depth: depth[i], running: p.Exit.IsZero(), end: p.Exit, traceID: unique(p.ID, usedPID)}
		if pp.running {
			pp.end = pl.end
		}
		idx := make([]int, len(p.Threads))
		for j := range idx {
			idx[j] = j
		}
		// Threads by creation, the main thread (ID == pid) first among equals.
		slices.SortStableFunc(idx, func(a, b int) int {
			ta, tb := &p.Threads[a], &p.Threads[b]
			if c := ta.Creation.Compare(tb.Creation); c != 0 {
				return c
			}
			if (ta.ID == p.ID) != (tb.ID == p.ID) {
				if ta.ID == p.ID {
					return -1
				}
				return 1
			}
			return 0
		})
		for _, j := range idx {
			t := &p.Threads[j]
			pt := planThread{t: t, index: j, running: t.Exit.IsZero(), end: t.Exit, traceID: unique(t.ID, usedTID)}
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

func checkSpan(creation, exit time.Time, user, kernel time.Duration) error {
	if creation.IsZero() {
		return invalid("no creation time")
	}
	if !exit.IsZero() && exit.Before(creation) {
		return invalid("exit %s before creation %s", exit.Format(time.RFC3339Nano), creation.Format(time.RFC3339Nano))
	}
	if user < 0 || kernel < 0 {
		return invalid("negative CPU time (user %v, kernel %v)", user, kernel)
	}
	return nil
}

// treeOrder returns the indexes of ps in depth-first tree order (children
// by creation) and each one's depth. A process's parent is the latest
// process with its Parent ID created no later than it (pids are reused);
// processes whose parent is not in the recording are roots, and so is any
// process caught in a parent cycle (which only corrupt input can make).
func treeOrder(ps []Process) (order, depth []int) {
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
			if c == i || ps[c].Creation.After(ps[i].Creation) {
				continue
			}
			if parent[i] < 0 || ps[c].Creation.After(ps[parent[i]].Creation) {
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
		if c := ps[a].Creation.Compare(ps[b].Creation); c != 0 {
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

// sanitize makes a task name safe to show, the way ps prints names: a task
// chooses its own name, and a name with bidi overrides or isolates could
// reverse the text around it, a control character could break a line.
// Every byte of invalid UTF-8 and every rune that is not printable (C0 and
// C1 controls, DEL, format characters such as U+202E and U+2066–U+2069,
// zero-width joiners, line and paragraph separators, spaces other than
// U+0020) becomes one '?'. Markup characters are left to the writer's
// escaping.
func sanitize(name string) string {
	clean := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		if (r == utf8.RuneError && size <= 1) || !unicode.IsPrint(r) {
			b.WriteByte('?')
		} else {
			b.WriteString(name[i : i+size])
		}
		i += max(size, 1)
	}
	return b.String()
}

// truncate shortens s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}
