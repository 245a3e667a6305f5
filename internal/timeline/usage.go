package timeline

import (
	"cmp"
	"slices"
	"time"
)

// CommandUse is what the processes of one command name used in a
// recording.
type CommandUse struct {
	// Name is the processes' final command name: a process that exec'd
	// counts under the name of what it exec'd last (a shell's child that
	// execs cc counts as cc, not as sh).
	Name string
	// Processes and Threads are how many of them the recording holds.
	Processes, Threads int
	// User and Kernel are the processes' own times, summed (each
	// process's threads', without its children's).
	User, Kernel time.Duration
	// PeakConcurrent is the most of them alive at once, from their
	// creation and exit times; one still running at the end of the
	// recording is alive until then.
	PeakConcurrent int
}

// ByCommand groups r's processes by their final command name, the one
// with most CPU first (ties by name).
func ByCommand(r *Recording) []CommandUse {
	if r == nil {
		return nil
	}
	index := map[string]int{}
	var out []CommandUse
	edges := map[string][]int64{}
	for i := range r.Processes {
		p := &r.Processes[i]
		k, ok := index[p.Name]
		if !ok {
			k = len(out)
			index[p.Name] = k
			out = append(out, CommandUse{Name: p.Name})
		}
		c := &out[k]
		c.Processes++
		c.Threads += len(p.Threads)
		c.User += p.User
		c.Kernel += p.Kernel
		from, to := lifeOf(r, p)
		edges[p.Name] = append(edges[p.Name], birth(from), death(to))
	}
	for k := range out {
		out[k].PeakConcurrent = mostAlive(edges[out[k].Name])
	}
	slices.SortStableFunc(out, func(a, b CommandUse) int {
		if c := cmp.Compare(b.User+b.Kernel, a.User+a.Kernel); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// lifeOf is the span p was alive within r: from its creation (or, not
// known, its first thread's, else the recording's start) to its exit (or,
// still running, the recording's end).
func lifeOf(r *Recording, p *Process) (time.Time, time.Time) {
	from, to := p.Creation, p.Exit
	if from.IsZero() {
		for _, t := range p.Threads {
			if !t.Creation.IsZero() && (from.IsZero() || t.Creation.Before(from)) {
				from = t.Creation
			}
		}
	}
	if from.IsZero() {
		from = r.Start
	}
	if to.IsZero() {
		to = r.End
	}
	if to.Before(from) {
		to = from
	}
	return from, to
}

// Parallelism is how parallel a recorded tree ran.
type Parallelism struct {
	// Average is the tree's CPU time over the recording's span: the mean
	// number of its tasks on a CPU.
	Average float64
	// Peak is the most tasks on a CPU at once, averaged over Window: each
	// thread's CPU is taken as growing evenly between the points where
	// it is known (its creation, each of its Samples, its end), as the
	// timeline's lanes take it. Exact to the window where samples are no
	// further apart than it; a thread without samples has its CPU spread
	// over its whole life, so a recording without any gives an estimate
	// (FromSamples false).
	Peak   float64
	Window time.Duration
	// FromSamples says the recording has samples of its threads' CPU
	// (a thread that lived between two has none, and is spread).
	FromSamples bool
	// PeakThreads is the most threads alive at once (on a CPU or not),
	// from their creation and exit times.
	PeakThreads int
}

// ParallelismWindow is the shortest window Parallelism averages over:
// the recorder samples each thread's CPU every 50 ms, and a peak of a
// shorter window would be the model's, not the samples'.
const ParallelismWindow = 10 * time.Millisecond

// maxWindows bounds the windows of a long recording: the window grows
// instead.
const maxWindows = 100_000

// ParallelismOf is how parallel r ran: see Parallelism.
func ParallelismOf(r *Recording) Parallelism {
	if r == nil {
		return Parallelism{}
	}
	from, to := span(r)
	lane, w := RunningLane(r, from, to, ParallelismWindow, maxWindows)
	pa := Parallelism{Window: w}
	for _, v := range lane {
		pa.Peak = max(pa.Peak, v)
	}
	var cpu time.Duration
	var es []int64
	for i := range r.Processes {
		p := &r.Processes[i]
		cpu += p.User + p.Kernel
		for j := range p.Threads {
			t := &p.Threads[j]
			a, b := threadLife(r, p, t)
			es = append(es, birth(a), death(b))
			pa.FromSamples = pa.FromSamples || len(t.Samples) > 0
		}
	}
	if d := to.Sub(from); d > 0 {
		pa.Average = float64(cpu) / float64(d)
	}
	pa.PeakThreads = mostAlive(es)
	return pa
}

// birth and death are the edges mostAlive counts: an instant in ns, twice,
// plus one for a birth, so that in order an exit comes before a creation
// at the same instant (the two tasks were not alive at once) and the
// edges sort as plain integers.
func birth(t time.Time) int64 { return t.UnixNano()*2 + 1 }
func death(t time.Time) int64 { return t.UnixNano() * 2 }

// mostAlive is the most tasks alive at once, from their edges (sorted in
// place).
func mostAlive(es []int64) int {
	slices.Sort(es)
	alive, most := 0, 0
	for _, e := range es {
		if e&1 == 1 {
			alive++
			most = max(most, alive)
		} else {
			alive--
		}
	}
	return most
}

// span is what r covers: from its start (or its first creation, if
// earlier) to the last of its end and its tasks' exits.
func span(r *Recording) (time.Time, time.Time) {
	from, to := r.Start, r.End
	for i := range r.Processes {
		p := &r.Processes[i]
		a, b := lifeOf(r, p)
		if from.IsZero() || a.Before(from) {
			from = a
		}
		if b.After(to) {
			to = b
		}
	}
	return from, to
}

// threadLife is t's span within r, as lifeOf's for a process.
func threadLife(r *Recording, p *Process, t *Thread) (time.Time, time.Time) {
	from, to := t.Creation, t.Exit
	if from.IsZero() {
		from, _ = lifeOf(r, p)
	}
	if to.IsZero() {
		to = r.End
	}
	if to.Before(from) {
		to = from
	}
	return from, to
}

// RunningLane is the tree's tasks on a CPU over [from, to), in windows of
// at least window (wider where more than most would be needed): in each,
// the CPU the threads used in it over its length. It returns the lane and
// the window.
func RunningLane(r *Recording, from, to time.Time, window time.Duration, most int) ([]float64, time.Duration) {
	d := to.Sub(from)
	if r == nil || d <= 0 || window <= 0 || most <= 0 {
		return nil, window
	}
	n := int((d + window - 1) / window)
	if n > most {
		window = (d + time.Duration(most) - 1) / time.Duration(most)
		n = int((d + window - 1) / window)
	}
	// Each segment between two known points runs at one rate: whole
	// windows get it by a difference array, the two ends their overlap.
	cpu := make([]float64, n+1) // ns of CPU in each window
	diff := make([]float64, n+1)
	add := func(a, b time.Time, used time.Duration) {
		x, y := a.Sub(from), b.Sub(from)
		if y <= x || used <= 0 {
			return
		}
		rate := float64(used) / float64(y-x)
		x, y = max(x, 0), min(y, d)
		if y <= x {
			return
		}
		i, j := int(x/window), int(y/window)
		if i == j {
			cpu[i] += rate * float64(y-x)
			return
		}
		cpu[i] += rate * float64(time.Duration(i+1)*window-x)
		cpu[j] += rate * float64(y-time.Duration(j)*window)
		diff[i+1] += rate * float64(window)
		diff[j] -= rate * float64(window)
	}
	for i := range r.Processes {
		p := &r.Processes[i]
		for k := range p.Threads {
			t := &p.Threads[k]
			a, b := threadLife(r, p, t)
			total := t.User + t.Kernel
			at, done := a, time.Duration(0)
			for _, s := range t.Samples {
				if !s.At.After(at) || !s.At.Before(b) || s.CPU < done || s.CPU > total {
					continue
				}
				add(at, s.At, s.CPU-done)
				at, done = s.At, s.CPU
			}
			add(at, b, total-done)
		}
	}
	lane := make([]float64, n)
	run := 0.0
	for i := range lane {
		run += diff[i]
		w := window
		if i == n-1 {
			w = d - time.Duration(n-1)*window
		}
		lane[i] = (cpu[i] + run) / float64(w)
	}
	return lane, window
}
