package timeline

import (
	"bufio"
	"fmt"
	"html"
	"image/color"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteHTML writes r as a self-contained HTML page: an inline SVG picture
// (no external resource) that any browser shows as it is. A header (kept
// at the top while scrolling) holds the title, a summary, the legend, the
// whole tree's CPU over time (a lane, in CPUs) and the time axis; below
// it, each process is a header row (name, pid, parent, thread count, its
// CPU time, its lifetime as a line over its summary lane: its CPU over
// time) followed by its threads, each a bar from its creation to its exit
// shaded by the share of one CPU it used while alive,
// (user+kernel)/(exit−creation), with its kernel share as an orange
// underline. Hovering a row shows its exact figures. Processes are in tree
// order, children indented under their parent; threads by creation. Rows
// shrink for thousands of threads, and past DefaultMaxThreads a note says
// how many were not drawn. ComputeLayout tells where everything is, as
// drawn.
//
// An inline script, which the picture does not need, makes the page a tool
// for trees of hundreds of processes (see zoomScript): processes start
// collapsed to their header row and open on a click, a search box finds
// processes and threads by name or id, and the time axis zooms (drag,
// Ctrl+wheel, w/s) and pans (Shift+wheel, a/d, arrows), the lanes
// recomputed for the span shown. Its state is in the address:
// #t=START,END (µs since the origin), &open=all or &open=PID,...,
// &q=TEXT.
//
// r is validated first; an invalid recording gives an error wrapping
// ErrInvalidRecording and writes nothing.
func WriteHTML(w io.Writer, r *Recording) error {
	return WriteHTMLOptions(w, r, Options{})
}

// WriteHTMLOptions is WriteHTML with a width and a row cap.
func WriteHTMLOptions(w io.Writer, r *Recording, o Options) error {
	pl, err := prepare(r)
	if err != nil {
		return err
	}
	L := layoutPlan(pl, o)
	lz := computeLanes(pl, L)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width\">\n<title>%s</title>\n<style>\n"+
		"html,body{margin:0;padding:0;background:#fff}\n"+
		".hdr{position:sticky;top:0;z-index:1;background:#fff}\n"+
		"svg{display:block}\n%s%s</style>\n</head>\n<body>\n",
		esc(pageTitle(pl)), svgCSS, pageCSS)
	fmt.Fprintf(bw, "<div class=\"hdr\" id=\"hdr\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		L.Width, HeaderHeight, L.Width, HeaderHeight)
	writeHeader(bw, pl, L, lz)
	fmt.Fprintf(bw, "</svg>")
	if len(pl.procs) > 0 {
		// The tools, shown by the page's script (they need it).
		fmt.Fprintf(bw, "<div id=\"tools\" hidden><input id=\"q\" type=\"search\" placeholder=\"find a process or thread: name or id\" size=\"34\" autocomplete=\"off\">"+
			" <span id=\"qn\"></span> <button id=\"openall\" type=\"button\">expand all</button> <button id=\"closeall\" type=\"button\">collapse all</button></div>")
	}
	fmt.Fprintf(bw, "</div>\n")
	// The rows' SVG keeps the page's coordinates (its viewBox starts at
	// HeaderHeight), so Layout's figures hold for both parts.
	bodyH := L.Height - HeaderHeight
	fmt.Fprintf(bw, "<svg id=\"rows\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 %d %d %d\">\n",
		L.Width, bodyH, HeaderHeight, L.Width, bodyH)
	writeRows(bw, pl, L, lz)
	fmt.Fprintf(bw, "</svg>\n")
	if len(pl.procs) > 0 {
		data, err := pageData(pl, L, lz)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "<script>\nvar Z = {l: %s, r: %s, span: %s, base: %d, foot: %s, laneTop: %d, laneH: %d, procH: %d};\nvar D = %s;\n%s</script>\n",
			f2(L.PlotLeft), f2(L.PlotRight), f2(float64(L.End.Sub(L.Origin).Nanoseconds())/1e3), HeaderHeight, f2(L.FooterY),
			LaneTop, LaneHeight, L.ProcessRowHeight, data, zoomScript)
	}
	fmt.Fprintf(bw, "</body>\n</html>\n")
	return bw.Flush()
}

// WriteSVG writes the same picture as WriteHTML as one standalone SVG
// document (the header does not stay in view when scrolling).
func WriteSVG(w io.Writer, r *Recording) error {
	return WriteSVGOptions(w, r, Options{})
}

// WriteSVGOptions is WriteSVG with a width and a row cap.
func WriteSVGOptions(w io.Writer, r *Recording, o Options) error {
	pl, err := prepare(r)
	if err != nil {
		return err
	}
	L := layoutPlan(pl, o)
	lz := computeLanes(pl, L)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"+
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n<title>%s</title>\n<style>\n%s</style>\n"+
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
		L.Width, L.Height, L.Width, L.Height, esc(pageTitle(pl)), svgCSS)
	writeHeader(bw, pl, L, lz)
	writeRows(bw, pl, L, lz)
	fmt.Fprintf(bw, "</svg>\n")
	return bw.Flush()
}

const svgCSS = `svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans","DejaVu Sans",sans-serif;font-size:12px;fill:#1f2328;font-variant-numeric:tabular-nums}
svg .mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:11px}
svg .dim{fill:#656d76}
svg .ttl{font-size:20px;font-weight:600}
svg .pn{font-weight:600}
svg .bar{shape-rendering:crispEdges}
svg .r .hit{fill:#fff0b3;fill-opacity:0}
svg .r:hover .hit{fill-opacity:.7}
svg .lane{fill:#4a98c9;fill-opacity:.55}
svg .hit.found{fill:#ffd33d;fill-opacity:.55}
`

// pageCSS styles what only the HTML page has: the tools, and the process
// rows that open and close.
const pageCSS = `#tools{position:absolute;top:10px;right:16px;font:13px system-ui,sans-serif}
#tools input{font:inherit;padding:2px 6px}
#tools button{font:inherit}
#qn{color:#656d76}
.hdr{box-shadow:0 1px 0 #d0d7de}
svg .ph{cursor:pointer}
`

func pageTitle(pl *plan) string {
	if len(pl.procs) == 0 {
		return "cputime timeline"
	}
	p := pl.procs[0].p
	return "cputime timeline: " + truncate(displayName(p.Name, "process", p.ID), 60)
}

// esc makes s safe as SVG/HTML text or attribute content: a name is
// sanitized (controls and bidi overrides become '?') and its markup
// characters escaped.
func esc(s string) string { return html.EscapeString(sanitize(s)) }

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// f and f2 print a coordinate: at most 2 decimals, no trailing zeros.
func f(v float64) string { return f2(v) }

func f2(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func percent(u float64) string {
	p := u * 100
	switch {
	case p == 0:
		return "0%"
	case p < 1:
		return "<1%"
	default:
		return strconv.Itoa(int(p+0.5)) + "%"
	}
}

// offset prints an instant as the time since the picture's origin.
func offset(pl *plan, t time.Time) string {
	return "+" + fmtDur(t.Sub(pl.origin))
}

func writeHeader(bw *bufio.Writer, pl *plan, L *Layout, lz *laneSet) {
	W := float64(L.Width)
	var threads int
	var user, kernel time.Duration
	for _, pp := range pl.procs {
		threads += len(pp.threads)
		user += pp.p.User
		kernel += pp.p.Kernel
	}
	fmt.Fprintf(bw, "<text class=\"ttl\" x=\"%d\" y=\"30\">%s</text>\n", PadX, esc(pageTitle(pl)))
	summary := fmt.Sprintf("%s · %s · wall %s · CPU %s (user %s, kernel %s)",
		plural(len(pl.procs), "process", "processes"), plural(threads, "thread", "threads"),
		fmtDur(pl.end.Sub(pl.origin)), fmtDur(user+kernel), fmtDur(user), fmtDur(kernel))
	if !pl.origin.IsZero() {
		summary += " · from " + pl.origin.UTC().Format("2006-01-02 15:04:05.000") + " UTC"
	}
	fmt.Fprintf(bw, "<text class=\"dim\" x=\"%d\" y=\"52\">%s</text>\n", PadX, html.EscapeString(summary))

	// Legend: the utilisation scale, the kernel underline, the running
	// marker and the process line.
	lx, ly := float64(PadX), 70.0
	fmt.Fprintf(bw, "<defs><linearGradient id=\"util\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">")
	for i, c := range utilStops {
		fmt.Fprintf(bw, "<stop offset=\"%s\" stop-color=\"%s\"/>", f(float64(i)/float64(len(utilStops)-1)), hexColor(c))
	}
	fmt.Fprintf(bw, "</linearGradient></defs>\n")
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">CPU used while alive</text>\n", f(lx), f(ly+11))
	gx := lx + 132
	fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"160\" height=\"14\" fill=\"url(#util)\"/>\n", f(gx), f(ly))
	for _, q := range []float64{0, 0.5, 1} {
		anchor := "middle"
		label := percent(q)
		if q == 1 {
			label = "100% of one CPU"
			anchor = "start"
			fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" font-size=\"11\" text-anchor=\"%s\">%s</text>\n", f(gx+160-6), f(ly+28), anchor, label)
			continue
		}
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" font-size=\"11\" text-anchor=\"%s\">%s</text>\n", f(gx+160*q), f(ly+28), anchor, label)
	}
	kx := gx + 290
	fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"34\" height=\"12\" fill=\"%s\"/>", f(kx), f(ly+1), hexColor(UtilisationColor(0.6)))
	fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"12\" height=\"3\" fill=\"%s\"/>\n", f(kx), f(ly+10), hexColor(KernelColor))
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">orange underline: kernel share of its CPU</text>\n", f(kx+42), f(ly+11))
	rx := kx + 322
	fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%s\" width=\"26\" height=\"12\" fill=\"%s\"/>", f(rx), f(ly+1), hexColor(UtilisationColor(0.3)))
	writeRunningMark(bw, rx+26, ly+1, ly+13, "")
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">still running at the end</text>\n", f(rx+42), f(ly+11))
	px := rx + 210
	writeLifeLine(bw, px, px+30, ly+7, false, "")
	fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\">process lifetime</text>\n", f(px+38), f(ly+11))

	// The tree's CPU over time: its lane, with its scale.
	if len(pl.procs) > 0 {
		laneBase := float64(LaneTop + LaneHeight)
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%s\">whole tree: CPUs in use</text>\n", PadX, f(laneBase-LaneHeight/2+4))
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" font-size=\"11\" text-anchor=\"end\" id=\"tscale\">%s</text>\n",
			f(L.PlotLeft-4), f(LaneTop+9), plural(int(lz.treeScale), "CPU", "CPUs"))
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" font-size=\"11\" text-anchor=\"end\">0</text>\n", f(L.PlotLeft-4), f(laneBase))
		fmt.Fprintf(bw, "<rect x=\"%s\" y=\"%d\" width=\"%s\" height=\"%d\" fill=\"#f6f8fa\"/>\n", f(L.PlotLeft), LaneTop, f(L.PlotRight-L.PlotLeft), LaneHeight)
		fmt.Fprintf(bw, "<path id=\"tlane\" class=\"lane\" d=\"%s\"/>\n", lanePath(lz.tree, L.PlotLeft, lz.w, laneBase, LaneHeight, lz.treeScale))
		avg := 0.0
		if span := pl.end.Sub(pl.origin); span > 0 {
			var cpu time.Duration
			for _, pp := range pl.procs {
				cpu += pp.p.User + pp.p.Kernel
			}
			avg = float64(cpu) / float64(span)
		}
		// The peak over ParallelismWindow, as run's summary gives it: the
		// lane's buckets are as wide as two pixels make them.
		peak := 0.0
		lane, _ := RunningLane(pl.rec, pl.origin, pl.end, ParallelismWindow, maxWindows)
		for _, v := range lane {
			peak = max(peak, v)
		}
		fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\" text-anchor=\"end\">%s avg</text>\n", f(W-PadX), f(laneBase-LaneHeight/2+4), strconv.FormatFloat(avg, 'f', 2, 64))
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" text-anchor=\"end\" font-size=\"11\">%s peak</text>\n", f(W-PadX), f(laneBase-LaneHeight/2+18), strconv.FormatFloat(peak, 'f', 2, 64))
	}

	// Column heads and the time axis.
	base := float64(HeaderHeight)
	fmt.Fprintf(bw, "<text class=\"dim\" x=\"%d\" y=\"%s\">process / thread</text>\n", PadX, f(base-10))
	fmt.Fprintf(bw, "<text class=\"dim\" x=\"%d\" y=\"%s\" text-anchor=\"end\">pid / tid</text>\n", LabelRight, f(base-10))
	fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" text-anchor=\"end\">CPU</text>\n", f(W-PadX-48), f(base-10))
	fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" text-anchor=\"end\">used</text>\n", f(W-PadX), f(base-10))
	fmt.Fprintf(bw, "<line x1=\"0\" x2=\"%s\" y1=\"%s\" y2=\"%s\" stroke=\"#d0d7de\"/>\n", f(W), f(base-0.5), f(base-0.5))
	// The axis and the grid are groups of their own: zooming redraws them.
	fmt.Fprintf(bw, "<g id=\"axis\">")
	for i, t := range L.Ticks {
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		} else if t.X > L.PlotRight-30 {
			anchor = "end"
		}
		fmt.Fprintf(bw, "<line x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\" stroke=\"#8c959f\"/>", f(t.X+0.5), f(t.X+0.5), f(base-7), f(base))
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" text-anchor=\"%s\">%s</text>\n", f(t.X), f(base-12), anchor, html.EscapeString(t.Label))
	}
	fmt.Fprintf(bw, "</g>\n")
	// Filled in by the page's script, so only a reader who can zoom is
	// told how.
	fmt.Fprintf(bw, "<text id=\"hint\" class=\"dim\" x=\"%s\" y=\"52\" text-anchor=\"end\"></text>\n", f(W-PadX))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
