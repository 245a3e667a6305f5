package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// progressBar draws bench's progress on one terminal line, redrawn in
// place. A nil *progressBar draws nothing: stderr is not a terminal.
type progressBar struct {
	w    io.Writer
	last int // the cells of the line drawn last, 0 for none
}

// progressWidth is the bar's width in cells.
const progressWidth = 30

// show draws the bar at done of total, with a label (before the bar) and
// a note (after it).
func (p *progressBar) show(label string, done, total int, note string) {
	if p == nil || total <= 0 {
		return
	}
	filled := min(done*progressWidth/total, progressWidth)
	if label == "" {
		label, note = note, ""
	}
	line := fmt.Sprintf("  %-36s %s%s %d/%d %s", label,
		strings.Repeat("█", filled), strings.Repeat("░", progressWidth-filled), done, total, note)
	p.draw(line)
}

// draw writes line over the last one: a carriage return, then spaces over
// what the last line had beyond it (no escape sequences, which not every
// console takes).
func (p *progressBar) draw(line string) {
	n := utf8.RuneCountInString(line)
	fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", max(p.last-n, 0)))
	p.last = n
}

// clear erases the bar, so that the results print on a clean line.
func (p *progressBar) clear() {
	if p == nil || p.last == 0 {
		return
	}
	p.draw("")
	fmt.Fprint(p.w, "\r")
	p.last = 0
}
