package timeline

import (
	"bufio"
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// writeRunningMark draws the chevron that says a bar goes on past the end.
func writeRunningMark(bw *bufio.Writer, x, y0, y1 float64, attrs string) {
	mid := (y0 + y1) / 2
	h := max((y1-y0)/2, 1.5)
	fmt.Fprintf(bw, "<path%s d=\"M%s %sL%s %sL%s %sZ\" fill=\"#1f2328\"/>", attrs, f2(x+1), f2(mid-h), f2(x+1+h), f2(mid), f2(x+1), f2(mid+h))
}

// writeLifeLine draws a process's lifetime: a line with a tick at each end
// (an arrow at the end if it was still running), in a group whose attrs
// let the page's script redraw it when zooming.
func writeLifeLine(bw *bufio.Writer, x0, x1, y float64, running bool, attrs string) {
	x1 = max(x1, x0+1)
	end := ""
	if !running {
		end = fmt.Sprintf("M%s %sV%s", f2(x1), f2(y-4), f2(y+4))
	}
	fmt.Fprintf(bw, "<g%s><path d=\"M%s %sH%sM%s %sV%s%s\" stroke=\"#57606a\" stroke-width=\"2\" fill=\"none\"/>",
		attrs, f2(x0), f2(y), f2(x1), f2(x0), f2(y-4), f2(y+4), end)
	if running {
		writeRunningMark(bw, x1-1, y-4, y+4, "")
	}
	fmt.Fprintf(bw, "</g>")
}

// nameRight is where names are cut, left of the id column (7 digits of
// 11 px monospace and a gap).
const nameRight = LabelRight - 54

func writeRows(bw *bufio.Writer, pl *plan, L *Layout, lz *laneSet) {
	W := float64(L.Width)
	r := pl.rec
	if len(pl.procs) == 0 {
		fmt.Fprintf(bw, "<text class=\"dim\" x=\"%d\" y=\"%d\">No process was recorded.</text>\n", PadX, HeaderHeight+24)
		return
	}
	// Names stay left of the id column, however long or deep.
	fmt.Fprintf(bw, "<defs><clipPath id=\"names\"><rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath></defs>\n",
		HeaderHeight, nameRight, L.Height-HeaderHeight)
	// The grid, then each process: its header row with its summary lane,
	// and its threads (striped) in a group the page's script can close.
	fmt.Fprintf(bw, "<g id=\"grid\">")
	for _, t := range L.Ticks {
		fmt.Fprintf(bw, "<line x1=\"%s\" x2=\"%s\" y1=\"%d\" y2=\"%s\" stroke=\"#e4e8ec\"/>\n", f(t.X+0.5), f(t.X+0.5), HeaderHeight, f(L.FooterY))
	}
	fmt.Fprintf(bw, "</g>\n")
	// Each drawn span carries its instants, µs since the origin, in
	// data-s and data-e, for the page's zoom.
	us := func(t time.Time) string { return f2(float64(t.Sub(pl.origin).Nanoseconds()) / 1e3) }

	font := min(12, L.RowHeight-3)
	ti := 0
	for k, pb := range L.Processes {
		pp := &pl.procs[pb.plan]
		p := pp.p
		indent := float64(min(pb.Depth, 8) * 14)
		cpu := p.User + p.Kernel
		fmt.Fprintf(bw, "<g class=\"proc\" id=\"p%d\" data-k=\"%d\" data-y=\"%s\">", k, k, f2(pb.Y0))
		fmt.Fprintf(bw, "<g class=\"r ph\"><title>%s</title>", processTooltip(pl, pp))
		fmt.Fprintf(bw, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#eaeef2\"/>", f(pb.Y0), f(W), f(pb.Y1-pb.Y0))
		fmt.Fprintf(bw, "<rect class=\"hit\" x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\"/>", f(pb.Y0), f(W), f(pb.Y1-pb.Y0))
		fmt.Fprintf(bw, "<line x1=\"0\" x2=\"%s\" y1=\"%s\" y2=\"%s\" stroke=\"#d0d7de\"/>", f(W), f(pb.Y0+0.5), f(pb.Y0+0.5))
		// The summary lane: the process's CPU over time, under its lifetime.
		fmt.Fprintf(bw, "<path class=\"lane\" d=\"%s\"/>", lanePath(lz.procs[pb.plan], L.PlotLeft, lz.w, pb.Y1-2, pb.Y1-pb.Y0-5, lz.procScale))
		fmt.Fprintf(bw, "<text class=\"tw dim\" x=\"3\" y=\"%s\" font-size=\"10\"></text>", f((pb.Y0+pb.Y1)/2+3.5))
		ty := (pb.Y0+pb.Y1)/2 + 4
		pfont := 12
		if pb.Y1-pb.Y0 < 18 {
			pfont = 10
			ty = (pb.Y0+pb.Y1)/2 + 3.5
		}
		prefix := ""
		if pb.Depth > 0 {
			prefix = "↳ "
		}
		suffix := " · " + plural(len(p.Threads), "thread", "threads")
		// About 7 px a bold character; the clip catches wide ones.
		room := (nameRight - PadX - int(indent) - 14 - 6*utf8.RuneCountInString(suffix)) / 7
		name := truncate(displayName(p.Name, "process", p.ID), max(room, 6))
		fmt.Fprintf(bw, "<text clip-path=\"url(#names)\" x=\"%s\" y=\"%s\" font-size=\"%d\"><tspan class=\"dim\">%s</tspan><tspan class=\"pn\">%s</tspan><tspan class=\"dim\">%s</tspan></text>",
			f(PadX+indent), f(ty), pfont, prefix, html.EscapeString(name), suffix)
		fmt.Fprintf(bw, "<text class=\"mono\" x=\"%d\" y=\"%s\" text-anchor=\"end\">%d</text>", LabelRight, f(ty), p.ID)
		run := ""
		if pb.Running {
			run = " data-run=\"1\""
		}
		writeLifeLine(bw, pb.X0, pb.X1, (pb.Y0+pb.Y1)/2, pb.Running,
			fmt.Sprintf(" class=\"life\" data-s=\"%s\" data-e=\"%s\" data-y=\"%s\" data-x=\"%s\"%s", us(pp.creation), us(pp.end), f2((pb.Y0+pb.Y1)/2), f2(max(pb.X1, pb.X0+1)-1), run))
		fmt.Fprintf(bw, "<text class=\"pn\" x=\"%s\" y=\"%s\" font-size=\"%d\" text-anchor=\"end\">%s</text>", f(W-PadX-48), f(ty), pfont, fmtDur(cpu))
		fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\" font-size=\"%d\" text-anchor=\"end\">%s</text>", f(W-PadX), f(ty), pfont,
			percent(utilisation(cpu, pp.end.Sub(pp.creation))))
		fmt.Fprintf(bw, "</g>\n<g class=\"ths\">")

		for k := 0; ti < len(L.Threads) && L.Threads[ti].Process == pb.Process; ti, k = ti+1, k+1 {
			tb := L.Threads[ti]
			pt := &pp.threads[k]
			if ti%2 == 1 && L.Labels { // stripes in rows too thin for text would only shimmer
				fmt.Fprintf(bw, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#f6f8fa\"/>", f(tb.RowY0), f(W), f(tb.RowY1-tb.RowY0))
			}
			t := pt.t
			h := tb.RowY1 - tb.RowY0
			fmt.Fprintf(bw, "<g class=\"r\"><title>%s</title>", threadTooltip(pl, p, pt, tb))
			fmt.Fprintf(bw, "<rect class=\"hit\" x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\"/>", f(tb.RowY0), f(W), f(h))
			bh := tb.Y1 - tb.Y0
			span := fmt.Sprintf(" data-s=\"%s\" data-e=\"%s\"", us(pt.creation), us(pt.end))
			fmt.Fprintf(bw, "<rect class=\"bar\"%s x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>",
				span, f2(tb.X0), f(tb.Y0), f2(tb.X1-tb.X0), f(bh), hexColor(tb.Fill))
			if tb.KernelShare > 0 && bh >= 6 {
				kh := max(2, float64(int(bh*0.28+0.5)))
				kw := max((tb.X1-tb.X0)*tb.KernelShare, 1)
				fmt.Fprintf(bw, "<rect class=\"bar\"%s data-k=\"%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>",
					span, strconv.FormatFloat(tb.KernelShare, 'f', 4, 64), f2(tb.X0), f(tb.Y1-kh), f2(kw), f(kh), hexColor(KernelColor))
			}
			if tb.Running {
				writeRunningMark(bw, tb.X1, tb.Y0, tb.Y1, span+fmt.Sprintf(" data-x=\"%s\"", f2(tb.X1)))
			}
			if L.Labels {
				ty := tb.RowY0 + h/2 + float64(font)*0.36
				name := truncate(displayName(t.Name, "thread", t.ID), max((nameRight-PadX-int(indent)-14)/7, 6))
				fmt.Fprintf(bw, "<text clip-path=\"url(#names)\" x=\"%s\" y=\"%s\" font-size=\"%d\">%s</text>", f(PadX+indent+14), f2(ty), font, html.EscapeString(name))
				fmt.Fprintf(bw, "<text class=\"mono dim\" x=\"%d\" y=\"%s\" text-anchor=\"end\">%d</text>", LabelRight, f2(ty), t.ID)
				fmt.Fprintf(bw, "<text x=\"%s\" y=\"%s\" font-size=\"%d\" text-anchor=\"end\">%s</text>", f(W-PadX-48), f2(ty), font, fmtDur(t.User+t.Kernel))
				fmt.Fprintf(bw, "<text class=\"dim\" x=\"%s\" y=\"%s\" font-size=\"%d\" text-anchor=\"end\">%s</text>", f(W-PadX), f2(ty), font, percent(tb.Utilisation))
			}
			fmt.Fprintf(bw, "</g>\n")
		}
		fmt.Fprintf(bw, "</g></g>\n")
	}
	if L.HiddenThreads > 0 {
		fmt.Fprintf(bw, "<text id=\"foot\" class=\"dim\" x=\"%d\" y=\"%s\">%s (in %s) not drawn: the picture stops at %d thread rows. The trace file (Perfetto, chrome://tracing) holds every one.</text>\n",
			PadX, f(L.FooterY+21), plural(L.HiddenThreads, "more thread", "more threads"),
			plural(L.HiddenProcesses+partlyHidden(L, r), "process", "processes"), len(L.Threads))
	}
}

// partlyHidden is 1 if the last drawn process lost some of its threads.
func partlyHidden(L *Layout, r *Recording) int {
	if len(L.Processes) == 0 {
		return 0
	}
	last := L.Processes[len(L.Processes)-1].Process
	n := 0
	for _, tb := range L.Threads {
		if tb.Process == last {
			n++
		}
	}
	if n < len(r.Processes[last].Threads) {
		return 1
	}
	return 0
}

func processTooltip(pl *plan, pp *planProc) string {
	p := pp.p
	var b strings.Builder
	fmt.Fprintf(&b, "%s: process %d, parent %d, %s\n", displayName(p.Name, "process", p.ID), p.ID, p.Parent, plural(len(p.Threads), "thread", "threads"))
	lifeLine(&b, pl, pp.creation, pp.creationUnknown, p.Exit, pp.end, pp.running)
	cpu := p.User + p.Kernel
	fmt.Fprintf(&b, "\nCPU %s = user %s + kernel %s (its own threads, not its children)\n%s of one CPU while alive",
		fmtDur(cpu), fmtDur(p.User), fmtDur(p.Kernel), percent(utilisation(cpu, pp.end.Sub(pp.creation))))
	return html.EscapeString(b.String())
}

func threadTooltip(pl *plan, p *Process, pt *planThread, tb ThreadBox) string {
	t := pt.t
	var b strings.Builder
	fmt.Fprintf(&b, "%s: thread %d of process %d (%s)\n", displayName(t.Name, "thread", t.ID), t.ID, p.ID, displayName(p.Name, "process", p.ID))
	lifeLine(&b, pl, pt.creation, pt.creationUnknown, t.Exit, pt.end, pt.running)
	cpu := t.User + t.Kernel
	fmt.Fprintf(&b, "\nCPU %s = user %s + kernel %s\n%s of one CPU while alive", fmtDur(cpu), fmtDur(t.User), fmtDur(t.Kernel), percent(tb.Utilisation))
	return html.EscapeString(b.String())
}

func lifeLine(b *strings.Builder, pl *plan, creation time.Time, unknown bool, exit, end time.Time, running bool) {
	if unknown {
		fmt.Fprintf(b, "creation not recorded (drawn from %s), ", offset(pl, creation))
		if running {
			fmt.Fprintf(b, "still running at the end (%s)", offset(pl, end))
		} else {
			fmt.Fprintf(b, "exited at %s", offset(pl, exit))
		}
		return
	}
	if running {
		fmt.Fprintf(b, "created at %s, still running at the end (%s): alive at least %s", offset(pl, creation), offset(pl, end), fmtDur(end.Sub(creation)))
		return
	}
	fmt.Fprintf(b, "created at %s, exited at %s: alive %s", offset(pl, creation), offset(pl, exit), fmtDur(exit.Sub(creation)))
}
