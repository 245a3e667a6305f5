package timeline

import (
	"image/color"
	"math"
	"time"
)

// The picture's geometry, in CSS pixels. Everything WriteHTML and WriteSVG
// draw is placed by ComputeLayout from these and the recording alone, so a
// test (or a tool) can tell where each bar is without parsing the output.
const (
	// DefaultWidth is the picture's width when Options.Width is 0; a
	// narrower one is widened to MinWidth, where the legend still fits.
	DefaultWidth = 1280
	MinWidth     = 1120
	// DefaultMaxThreads is how many thread rows are drawn at most when
	// Options.MaxThreads is 0; the rest are counted in a note.
	DefaultMaxThreads = 5000

	// HeaderHeight is the height of the title, legend, the tree's CPU lane
	// and the time axis above the rows (sticky at the top of the HTML page).
	HeaderHeight = 188
	// The tree's CPU lane spans LaneTop to LaneTop+LaneHeight in the header.
	LaneTop = 104
	// The label column (names, tids) runs from PadX to LabelRight; the
	// plot from PlotLeft to Width−StatsWidth; the statistics column (CPU
	// time, utilisation) from there to Width−PadX.
	PadX       = 16
	LabelRight = 316
	PlotLeft   = 332
	StatsWidth = 176

	// MaxRowHeight is a thread row's height for up to rowBudget/MaxRowHeight
	// rows; with more, rows shrink to fit rowBudget, down to MinRowHeight.
	MaxRowHeight = 18
	MinRowHeight = 3
	rowBudget    = 14000
	// Labels (names, figures) are drawn in rows at least this tall.
	MinLabelRow = 11
	// MinBarWidth keeps a thread that lived less than a pixel visible.
	MinBarWidth = 2.0
	noteHeight  = 32
)

// Options tune the picture; the zero value is the default.
type Options struct {
	Width      int // CSS pixels; DefaultWidth if 0, at least MinWidth
	MaxThreads int // thread rows drawn at most; DefaultMaxThreads if 0
}

// Layout is where every part of the picture goes, in CSS pixels from the
// top-left corner of the picture (the HTML page's, whose body has no
// margin).
type Layout struct {
	Width, Height       int
	PlotLeft, PlotRight float64
	// Origin and End are the instants at PlotLeft and PlotRight.
	Origin, End      time.Time
	RowHeight        int // a thread row; a process header row is ProcessRowHeight
	ProcessRowHeight int
	Labels           bool // whether rows are tall enough to carry text
	Processes        []ProcessBox
	Threads          []ThreadBox // drawing order: each process's threads after its header
	// HiddenThreads and HiddenProcesses were not drawn (Options.MaxThreads).
	HiddenThreads, HiddenProcesses int
	// Ticks are the time axis's labelled instants.
	Ticks []Tick
	// FooterY is where the note about hidden threads (if any) begins.
	FooterY float64
}

// ProcessBox is a process's header row.
type ProcessBox struct {
	plan    int // index in plan.procs
	Process int // index in Recording.Processes
	Depth   int // 0 for a root of the tree
	Y0, Y1  float64
	X0, X1  float64 // its lifetime on the time axis
	Running bool
}

// ThreadBox is one thread's row and bar.
type ThreadBox struct {
	Process, Thread int // indexes in Recording.Processes and its Threads
	RowY0, RowY1    float64
	// X0, X1, Y0, Y1 bound the bar: X0 at the creation, X1 at the exit (or
	// the end of the recording), at least MinBarWidth wide.
	X0, X1, Y0, Y1 float64
	Utilisation    float64 // (user+kernel)/(exit−creation); may exceed 1 by a tick
	KernelShare    float64 // kernel/(user+kernel), 0 without CPU time
	Fill           color.RGBA
	Running        bool
}

// Tick is one labelled instant of the time axis.
type Tick struct {
	X     float64
	Label string
}

// ComputeLayout validates r and places every part of its picture.
func ComputeLayout(r *Recording, o Options) (*Layout, error) {
	pl, err := prepare(r)
	if err != nil {
		return nil, err
	}
	return layoutPlan(pl, o), nil
}

func layoutPlan(pl *plan, o Options) *Layout {
	width := o.Width
	if width == 0 {
		width = DefaultWidth
	}
	width = max(width, MinWidth)
	maxThreads := o.MaxThreads
	if maxThreads <= 0 {
		maxThreads = DefaultMaxThreads
	}
	L := &Layout{
		Width: width, PlotLeft: PlotLeft, PlotRight: float64(width - StatsWidth),
		Origin: pl.origin, End: pl.end,
	}
	span := pl.end.Sub(pl.origin)
	if span <= 0 {
		// Everything at one instant: a millisecond's axis.
		span = time.Millisecond
		L.End = pl.origin.Add(span)
	}
	plotW := L.PlotRight - L.PlotLeft
	xOf := func(t time.Time) float64 {
		return L.PlotLeft + float64(t.Sub(pl.origin))/float64(span)*plotW
	}

	// Which rows are drawn: threads in tree order up to maxThreads; a
	// process all of whose threads are cut is not drawn either.
	drawn := 0
	nProcs := 0
	for _, pp := range pl.procs {
		if drawn >= maxThreads && len(pp.threads) > 0 {
			L.HiddenProcesses++
			L.HiddenThreads += len(pp.threads)
			continue
		}
		nProcs++
		n := min(len(pp.threads), maxThreads-drawn)
		drawn += n
		L.HiddenThreads += len(pp.threads) - n
	}

	u := MaxRowHeight
	procH := MaxRowHeight + 8
	if drawn > 0 && drawn*MaxRowHeight+nProcs*procH > rowBudget {
		procH = 14
		u = (rowBudget - nProcs*procH) / drawn
		u = min(max(u, MinRowHeight), MaxRowHeight)
		if u >= 12 {
			procH = u + 6
		}
	}
	L.RowHeight, L.ProcessRowHeight = u, procH
	L.Labels = u >= MinLabelRow
	// Bars leave a gap above and below (top, bottom): at least one pixel
	// between neighbours, so dense rows stay countable.
	top, bottom := 3.0, 3.0
	switch {
	case u < 6:
		top, bottom = 0, 1
	case u < MinLabelRow:
		top, bottom = 1, 1
	}

	y := float64(HeaderHeight)
	drawn = 0
	for pi, pp := range pl.procs {
		if drawn >= maxThreads && len(pp.threads) > 0 {
			continue
		}
		pb := ProcessBox{
			plan:    pi,
			Process: pp.index, Depth: pp.depth, Y0: y, Y1: y + float64(procH),
			X0: xOf(pp.creation), X1: xOf(pp.end), Running: pp.running,
		}
		L.Processes = append(L.Processes, pb)
		y = pb.Y1
		for _, pt := range pp.threads {
			if drawn >= maxThreads {
				break
			}
			drawn++
			t := pt.t
			cpu := t.User + t.Kernel
			tb := ThreadBox{
				Process: pb.Process, Thread: pt.index,
				RowY0: y, RowY1: y + float64(u),
				X0: xOf(pt.creation), X1: xOf(pt.end),
				Y0: y + top, Y1: y + float64(u) - bottom,
				Utilisation: utilisation(cpu, pt.end.Sub(pt.creation)),
				Running:     pt.running,
			}
			if cpu > 0 {
				tb.KernelShare = float64(t.Kernel) / float64(cpu)
			}
			if tb.X1-tb.X0 < MinBarWidth {
				tb.X1 = tb.X0 + MinBarWidth
			}
			tb.Fill = UtilisationColor(tb.Utilisation)
			L.Threads = append(L.Threads, tb)
			y = tb.RowY1
		}
	}
	L.FooterY = y
	if L.HiddenThreads > 0 {
		y += noteHeight
	}
	L.Height = int(math.Ceil(y)) + 12
	L.Ticks = axisTicks(span, plotW, L.PlotLeft)
	return L
}

// The utilisation scale: light to dark blue as a thread uses more of one
// CPU while it is alive (ColorBrewer's Blues, the lightest step dropped so
// an idle thread still stands out from the row background).
var utilStops = [...]color.RGBA{
	{0xd4, 0xe4, 0xf4, 0xff}, // 0
	{0x9e, 0xca, 0xe1, 0xff}, // 25 %
	{0x4a, 0x98, 0xc9, 0xff}, // 50 %
	{0x17, 0x64, 0xab, 0xff}, // 75 %
	{0x08, 0x30, 0x6b, 0xff}, // 100 % and more
}

// KernelColor marks the kernel share of a thread's CPU time.
var KernelColor = color.RGBA{0xf0, 0x8c, 0x00, 0xff}

// UtilisationColor is the fill of a bar for utilisation u (1 = one CPU all
// the time), clamped to [0, 1] and interpolated between the scale's stops.
func UtilisationColor(u float64) color.RGBA {
	if math.IsNaN(u) || u < 0 {
		u = 0
	}
	u = min(u, 1)
	f := u * float64(len(utilStops)-1)
	i := min(int(f), len(utilStops)-2)
	frac := f - float64(i)
	a, b := utilStops[i], utilStops[i+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + (float64(y)-float64(x))*frac)) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}

// axisTicks places labelled ticks at a round step (1, 2 or 5 × 10^k) about
// every 110 pixels.
func axisTicks(span time.Duration, plotW, left float64) []Tick {
	want := max(plotW/110, 2)
	raw := float64(span) / want
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	stepD := time.Duration(step)
	if stepD <= 0 {
		stepD = 1
	}
	// One unit for the whole axis, the largest its last label reaches:
	// 0, 0.2 s, …, 1 s rather than 1000 ms.
	last := span / stepD * stepD
	unit, name := time.Nanosecond, "ns"
	switch {
	case last >= time.Second:
		unit, name = time.Second, "s"
	case last >= time.Millisecond:
		unit, name = time.Millisecond, "ms"
	case last >= time.Microsecond:
		unit, name = time.Microsecond, "µs"
	}
	var ticks []Tick
	for t := time.Duration(0); t <= span; t += stepD {
		label := "0"
		if t > 0 {
			label = trimFloat(float64(t)/float64(unit), 12) + " " + name
		}
		ticks = append(ticks, Tick{X: left + float64(t)/float64(span)*plotW, Label: label})
	}
	return ticks
}
