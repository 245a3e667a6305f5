package timeline

import (
	"encoding/json"
	"math"
	"time"
)

// The CPU-over-time lanes: one for the whole tree in the header, one in
// each process's header row (its summary lane, what a collapsed process
// shows). A lane's value over a span of time is the CPU its threads used
// in that span divided by the span: in CPUs, 1 = one CPU all the time.
//
// A thread's CPU within its life comes from its cumulative CPU, known at
// its creation (0), at its samples, and at its end (User+Kernel), and
// taken as growing evenly between two of those points: exact at the
// points, an average between them. The page's script computes the same
// for a zoomed view (cpuAt in the script), from the same points.

const (
	// LaneHeight is the tree lane's height in the header.
	LaneHeight = 40
	// laneBucket is the width in pixels over which a lane averages.
	laneBucket = 2
)

// cpuPoint is one point of a thread's cumulative CPU: at instant at
// (since the plan's origin), cpu used since the thread's creation.
type cpuPoint struct {
	at, cpu time.Duration
}

// cpuPoints returns the points of pt's cumulative CPU, in order.
func cpuPoints(pl *plan, pt *planThread) []cpuPoint {
	t := pt.t
	total := t.User + t.Kernel
	pts := make([]cpuPoint, 0, len(t.Samples)+2)
	pts = append(pts, cpuPoint{pt.creation.Sub(pl.origin), 0})
	for _, s := range t.Samples {
		if s.At.After(pt.creation) && s.At.Before(pt.end) && s.CPU <= total {
			pts = append(pts, cpuPoint{s.At.Sub(pl.origin), s.CPU})
		}
	}
	return append(pts, cpuPoint{pt.end.Sub(pl.origin), total})
}

// cumulative is the thread's CPU used by instant x, interpolated.
func cumulative(pts []cpuPoint, x time.Duration) float64 {
	if x <= pts[0].at {
		return 0
	}
	last := pts[len(pts)-1]
	if x >= last.at {
		return float64(last.cpu)
	}
	for i := 1; i < len(pts); i++ {
		if x <= pts[i].at {
			a, b := pts[i-1], pts[i]
			if b.at == a.at {
				return float64(b.cpu)
			}
			return float64(a.cpu) + float64(b.cpu-a.cpu)*float64(x-a.at)/float64(b.at-a.at)
		}
	}
	return float64(last.cpu)
}

// addLane adds to lane (n buckets evenly over [from, to), in CPUs) the CPU
// of one thread.
func addLane(lane []float64, pts []cpuPoint, from, to time.Duration) {
	n := len(lane)
	w := float64(to-from) / float64(n)
	if w <= 0 {
		return
	}
	first := max(0, int(math.Floor(float64(pts[0].at-from)/w)))
	last := min(n-1, int(math.Floor(float64(pts[len(pts)-1].at-from)/w)))
	for i := first; i <= last; i++ {
		a := from + time.Duration(float64(i)*w)
		b := from + time.Duration(float64(i+1)*w)
		lane[i] += (cumulative(pts, b) - cumulative(pts, a)) / float64(b-a)
	}
}

// lanes computes, over [from, to) since the plan's origin in n buckets,
// the tree's lane and each process's (in plan order).
func lanes(pl *plan, n int, from, to time.Duration) (tree []float64, procs [][]float64) {
	tree = make([]float64, n)
	procs = make([][]float64, len(pl.procs))
	for i := range pl.procs {
		pp := &pl.procs[i]
		procs[i] = make([]float64, n)
		for k := range pp.threads {
			addLane(procs[i], cpuPoints(pl, &pp.threads[k]), from, to)
		}
		for b, v := range procs[i] {
			tree[b] += v
		}
	}
	return tree, procs
}

// laneScale is the value a lane's full height stands for: the peak,
// rounded up to a whole number of CPUs (at least one).
func laneScale(vals ...[]float64) float64 {
	peak := 0.0
	for _, l := range vals {
		for _, v := range l {
			peak = max(peak, v)
		}
	}
	return max(1, math.Ceil(peak-1e-9))
}

// lanePath is the SVG path of a lane drawn as steps from x0, each bucket
// w pixels wide, on a base line at y, full height h standing for scale.
func lanePath(lane []float64, x0, w, y, h, scale float64) string {
	b := make([]byte, 0, 16*len(lane))
	b = append(b, 'M')
	b = append(b, f2(x0)...)
	b = append(b, ' ')
	b = append(b, f2(y)...)
	prev := math.NaN()
	for i, v := range lane {
		top := y - h*min(v/scale, 1)
		if top != prev {
			b = append(b, 'V')
			b = append(b, f2(top)...)
			prev = top
		}
		b = append(b, 'H')
		b = append(b, f2(x0+w*float64(i+1))...)
	}
	b = append(b, 'V')
	b = append(b, f2(y)...)
	b = append(b, 'Z')
	return string(b)
}

// laneSet is what the pictures draw of the lanes: n buckets w pixels wide
// from PlotLeft, the tree's and each process's (in plan order), and the
// values their full heights stand for (one scale for every process, so
// that their lanes compare).
type laneSet struct {
	n                    int
	w                    float64
	tree                 []float64
	procs                [][]float64
	treeScale, procScale float64
}

func computeLanes(pl *plan, L *Layout) *laneSet {
	plotW := L.PlotRight - L.PlotLeft
	n := max(1, int(plotW/laneBucket))
	lz := &laneSet{n: n, w: plotW / float64(n)}
	lz.tree, lz.procs = lanes(pl, n, 0, L.End.Sub(L.Origin))
	lz.treeScale = laneScale(lz.tree)
	lz.procScale = laneScale(lz.procs...)
	return lz
}

// pageData is the JSON the page's script works from: for each drawn
// process (in drawing order) its name, id, the height of its thread rows
// and its threads' names, ids and cumulative CPU points (µs since the
// origin, µs of CPU), so that it can find tasks and recompute the lanes
// for a zoomed view.
func pageData(pl *plan, L *Layout, lz *laneSet) ([]byte, error) {
	type proc struct {
		Name    string      `json:"n"`
		ID      int         `json:"i"`
		Y       float64     `json:"y"` // the header row's top
		H       float64     `json:"h"` // the height of its thread rows
		Threads []any       `json:"t"` // [name, id]
		Points  [][]float64 `json:"c"` // per thread: at, cpu, at, cpu, ...
	}
	us := func(d time.Duration) float64 { return math.Round(float64(d.Nanoseconds())/1e3*1000) / 1000 }
	var out struct {
		Procs     []proc  `json:"p"`
		N         int     `json:"n"`
		ProcScale float64 `json:"ps"`
		TreeScale float64 `json:"ts"`
		// Rest holds the points of the threads not drawn (past
		// Options.MaxThreads): they count in the tree's lane only.
		Rest [][]float64 `json:"r"`
	}
	out.N, out.ProcScale, out.TreeScale = lz.n, lz.procScale, lz.treeScale
	ti := 0
	for _, pb := range L.Processes {
		pp := &pl.procs[pb.plan]
		p := proc{Name: sanitize(pp.p.Name), ID: pp.p.ID, Y: pb.Y0, Threads: []any{}, Points: [][]float64{}}
		end := pb.Y1
		for k := 0; ti < len(L.Threads) && L.Threads[ti].Process == pb.Process; ti, k = ti+1, k+1 {
			pt := &pp.threads[k]
			p.Threads = append(p.Threads, []any{sanitize(pt.t.Name), pt.t.ID})
			var c []float64
			for _, x := range cpuPoints(pl, pt) {
				c = append(c, us(x.at), us(x.cpu))
			}
			p.Points = append(p.Points, c)
			end = L.Threads[ti].RowY1
		}
		p.H = end - pb.Y1
		out.Procs = append(out.Procs, p)
	}
	drawn := make(map[[2]int]bool, len(L.Threads))
	for _, tb := range L.Threads {
		drawn[[2]int{tb.Process, tb.Thread}] = true
	}
	out.Rest = [][]float64{}
	for i := range pl.procs {
		pp := &pl.procs[i]
		for k := range pp.threads {
			if drawn[[2]int{pp.index, pp.threads[k].index}] {
				continue
			}
			var c []float64
			for _, x := range cpuPoints(pl, &pp.threads[k]) {
				c = append(c, us(x.at), us(x.cpu))
			}
			out.Rest = append(out.Rest, c)
		}
	}
	return json.Marshal(out)
}
