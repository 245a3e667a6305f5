package top

import (
	"strconv"
	"time"

	"github.com/cputime/cputime/internal/names"
)

// The table's columns. NAME is last (names hold spaces); EVENT has none,
// so that awk's fields stay put: "-", "new", "exit@TIME" (the exit instant)
// or "exit@TIME/TIME" (the bracket: last seen alive, first seen gone).
// wide shows USR% and SYS%, and CREATED to the millisecond; a narrow
// screen leaves the split out and CREATED to the second, so that NAME
// (15 bytes on Linux) stays on it.
func appendHeader(b []byte, threads bool, eventWidth int, wide bool) []byte {
	id := "PID"
	if threads {
		id = "TID"
	}
	b = pad(b, id, 7)
	for i, h := range [...]string{"%CPU", "USR%", "SYS%"} {
		if i > 0 && !wide {
			break
		}
		b = pad(append(b, ' '), h, 6)
	}
	b = pad(append(b, ' '), "RES", 6)
	b = pad(append(b, ' '), "TIME+", 12)
	b = pad(append(b, ' '), "CREATED", createdWidth(wide))
	b = append(b, " S EVENT"...)
	for i := len("EVENT"); i < eventWidth; i++ {
		b = append(b, ' ')
	}
	return append(b, " NAME"...)
}

// formatRow appends r's line (without NAME padding beyond eventWidth).
func formatRow(b []byte, r *row, eventWidth int, wide bool, now time.Time) []byte {
	var num [24]byte
	b = pad(b, string(strconv.AppendInt(num[:0], int64(r.id()), 10)), 7)
	for i, v := range [...]float64{r.cpu, r.usr, r.sys} {
		if i > 0 && !wide {
			break
		}
		b = append(b, ' ')
		if v < 0 {
			b = pad(b, "-", 6)
		} else {
			b = pad(b, string(strconv.AppendFloat(num[:0], v, 'f', 1, 64)), 6)
		}
	}
	b = append(b, ' ')
	b = pad(b, string(appendBytes(num[:0], r.rss)), 6)
	b = append(b, ' ')
	b = pad(b, string(appendCPUTime(num[:0], r.total)), 12)
	b = append(b, ' ')
	b = pad(b, formatCreated(r.created, now, wide), createdWidth(wide))
	b = append(b, ' ')
	if r.state == 0 {
		b = append(b, '-')
	} else {
		b = append(b, r.state)
	}
	b = append(b, ' ')
	ev := eventText(r)
	b = append(b, ev...)
	for i := len(ev); i < eventWidth; i++ {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	return appendName(b, r.name)
}

func eventText(r *row) string {
	switch r.ev {
	case evNew:
		return "new"
	case evExited:
		if !r.exit.IsZero() {
			return "exit@" + clock(r.exit)
		}
		// Exited between the last refresh that saw it and goneAt: the
		// bracket's end, which keeps the column's width (JSON has both).
		return "gone@" + clock(r.goneAt)
	case evDenied:
		return "denied"
	}
	return "-"
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

// formatCreated shows a creation time of the last day as a time of day
// with milliseconds, older ones as a date.
// Narrow (not wide): to the second, and older ones as "Nov26" (ps's
// START).
func formatCreated(t time.Time, now time.Time, wide bool) string {
	switch {
	case t.IsZero():
		return "-"
	case now.Sub(t) < 24*time.Hour && wide:
		return clock(t)
	case now.Sub(t) < 24*time.Hour:
		return t.Format("15:04:05")
	case wide:
		return t.Format("2006-01-02")
	}
	return t.Format("Jan02")
}

func createdWidth(wide bool) int {
	if wide {
		return 13
	}
	return 8
}

// appendCPUTime formats a CPU time as top's TIME+ does, minutes:seconds,
// with milliseconds where top has hundredths: 12:34.567.
func appendCPUTime(b []byte, d time.Duration) []byte {
	ms := d.Milliseconds()
	b = strconv.AppendInt(b, ms/60000, 10)
	b = append(b, ':')
	s := ms % 60000 / 1000
	b = append(b, byte('0'+s/10), byte('0'+s%10), '.')
	f := ms % 1000
	return append(b, byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// pad right-aligns s in width columns.
func pad(b []byte, s string, width int) []byte {
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendName appends a task name as ps prints untrusted names (see
// package names): a name cannot move the cursor or reorder the line.
func appendName(b []byte, name string) []byte { return names.Append(b, name) }

// eventWidth is the width of the EVENT column: the widest event,
// "exit@15:04:05.000", whatever the rows hold, so that NAME does not move
// between refreshes.
func eventWidth([]row) int { return len("exit@15:04:05.000") }

// appendBytes formats a resident size in 6 columns or fewer, in binary
// units as procps top does: 812K, 12.3M, 1.25G; "-" where unknown.
func appendBytes(b []byte, n int64) []byte {
	const k, m, g = 1 << 10, 1 << 20, 1 << 30
	switch {
	case n < 0:
		return append(b, '-')
	case n < 10000*k:
		return append(strconv.AppendInt(b, (n+k-1)/k, 10), 'K')
	case n < 1000*m:
		return append(strconv.AppendFloat(b, float64(n)/m, 'f', 1, 64), 'M')
	case n < 100*g:
		return append(strconv.AppendFloat(b, float64(n)/g, 'f', 2, 64), 'G')
	}
	return append(strconv.AppendFloat(b, float64(n)/(1<<40), 'f', 2, 64), 'T')
}

// counts returns how many rows are new, exited and denied.
func counts(rows []row) (newN, exitedN, deniedN int) {
	for i := range rows {
		switch rows[i].ev {
		case evNew:
			newN++
		case evExited:
			exitedN++
		case evDenied:
			deniedN++
		}
	}
	return newN, exitedN, deniedN
}

// statusLine is the first line of each refresh, in batch and on screen.
func statusLine(f *frame, sortBy sortKey) []byte {
	b := []byte("cputime top - ")
	b = append(b, f.at.Format("15:04:05.000")...)
	b = append(b, "  interval "...)
	if f.first {
		b = append(b, "- (first refresh: cumulative times only)"...)
	} else {
		b = strconv.AppendFloat(b, f.interval.Seconds(), 'f', 3, 64)
		b = append(b, 's')
	}
	b = append(b, "  tasks "...)
	b = strconv.AppendInt(b, int64(len(f.rows)), 10)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(f.newN), 10)
	b = append(b, " new, "...)
	b = strconv.AppendInt(b, int64(f.exitedN), 10)
	b = append(b, " exited"...)
	if f.deniedN > 0 {
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(f.deniedN), 10)
		b = append(b, " access denied"...)
	}
	b = append(b, ')')
	if f.threads {
		b = append(b, " threads"...)
	}
	b = append(b, "  cpu "...)
	b = f.machine.appendText(b, f.first)
	b = append(b, "  sort "...)
	b = append(b, sortBy.String()...)
	if f.errs > 0 {
		b = append(b, "  unreadable "...)
		b = strconv.AppendInt(b, int64(f.errs), 10)
	}
	return b
}
