package top

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cputime/cputime/internal/names"
	"github.com/cputime/cputime/sampler"
)

// sortKey is the column rows are sorted by.
type sortKey uint8

const (
	byCPU  sortKey = iota // P: %CPU, then TIME+
	byTime                // T: TIME+
	byMem                 // M: RES (resident memory)
	byPID                 // N: PID (TID with -H), highest first as in procps
)

func (k sortKey) String() string {
	switch k {
	case byTime:
		return "TIME+"
	case byMem:
		return "RES"
	case byPID:
		return "PID"
	}
	return "%CPU"
}

// event marks a row: a task that appeared or exited since the last refresh.
type event uint8

const (
	evNone event = iota
	evNew
	evExited
	evDenied // a process whose files may not be read: PID and CPU time only
)

// row is one line of the table: a process, or a thread with -H.
type row struct {
	pid, tid  int
	name      string
	state     byte
	cpu       float64 // %CPU over the interval; negative in the first refresh
	usr, sys  float64
	total     time.Duration
	user, ker time.Duration
	created   time.Time
	ev        event
	exit      time.Time // exact exit instant, where a pidfd said so
	lastSeen  time.Time // the exit bracket otherwise
	goneAt    time.Time
	rss       int64 // resident memory of its process in bytes; negative: unknown
}

// id is the first column: TID with -H, PID otherwise.
func (r *row) id() int {
	if r.tid != 0 {
		return r.tid
	}
	return r.pid
}

type splitKey struct{ pid, tid int }

// model turns samples into rows: it remembers each task's last split, so
// that USR% and SYS% are the growth of each part over the interval.
type model struct {
	prev, next map[splitKey][2]time.Duration
	mem        memReader
	// Resident memory by process: the last build's, and this one's.
	rssPrev, rssNext map[int]rssValue
}

type rssValue struct {
	bytes int64
	read  bool // read in this build, not carried over
}

func newModel() *model {
	return &model{prev: map[splitKey][2]time.Duration{}, next: map[splitKey][2]time.Duration{},
		rssPrev: map[int]rssValue{}, rssNext: map[int]rssValue{}}
}

// rssOf is process pid's resident memory. It is read (one read of
// /proc/PID/statm) when fresh (a task of the process ran during the
// interval, or is new) or not known yet, at most once per build; a process
// none of whose tasks ran keeps the figure it had, as the sampler keeps its
// times: on a machine of 10,000 processes, reading every one each refresh
// doubled the refresh's cost, for figures that idle processes rarely
// change (reclaim and swap can shrink them meanwhile).
func (m *model) rssOf(pid int, fresh bool) int64 {
	v, ok := m.rssNext[pid]
	if ok && (v.read || !fresh) {
		return v.bytes
	}
	if !fresh {
		if p, ok := m.rssPrev[pid]; ok {
			m.rssNext[pid] = rssValue{bytes: p.bytes}
			return p.bytes
		}
	}
	b := m.mem.rss(pid)
	m.rssNext[pid] = rssValue{bytes: b, read: true}
	return b
}

// frame is what one refresh shows.
type frame struct {
	at       time.Time
	interval time.Duration
	first    bool
	threads  bool
	rows     []row
	newN     int
	exitedN  int
	deniedN  int
	machine  machineCPU
	errs     int
}

// build makes the rows of a sample: processes, or threads with threads set.
func (m *model) build(x *sampler.Sample, threads bool, rows []row) []row {
	clear(m.next)
	clear(m.rssNext)
	start := len(rows)
	sec := x.Interval.Seconds()
	add := func(t sampler.Task, ev event, e *sampler.Exited) {
		k := splitKey{t.PID, t.TID}
		r := row{pid: t.PID, tid: t.TID, name: t.Name, state: t.State, total: t.Times.Total(),
			user: t.Times.User, ker: t.Times.Kernel, created: t.Times.Creation, ev: ev, cpu: -1, usr: -1, sys: -1, rss: -1}
		if t.New {
			r.ev = evNew
		}
		if !x.First && sec > 0 {
			var pu, pk time.Duration
			if p, ok := m.prev[k]; ok && !t.New {
				pu, pk = p[0], p[1]
			}
			du, dk := max(t.Times.User-pu, 0), max(t.Times.Kernel-pk, 0)
			if t.New {
				// Its whole split, scaled to its Delta: a thread that took
				// its process's main thread id by exec continues, and its
				// Delta holds only what it used since its last refresh.
				du, dk = t.Times.User, t.Times.Kernel
				if tot := du + dk; tot > t.Delta && tot > 0 {
					du = time.Duration(float64(t.Delta) * float64(du) / float64(tot))
					dk = t.Delta - du
				}
			}
			r.cpu = 100 * t.Delta.Seconds() / sec
			r.usr = 100 * du.Seconds() / sec
			r.sys = 100 * dk.Seconds() / sec
			if e != nil && t.Delta == 0 {
				r.usr, r.sys = 0, 0
			}
		}
		if e != nil {
			r.state = 'X'
			r.exit, r.lastSeen, r.goneAt = e.Times.Exit, e.LastSeen, e.GoneAt
		} else {
			m.next[k] = [2]time.Duration{t.Times.User, t.Times.Kernel}
			r.rss = m.rssOf(t.PID, x.First || t.New || t.Delta > 0)
		}
		rows = append(rows, r)
	}
	live, exited := x.Processes, x.ExitedProcesses
	if threads {
		live, exited = x.Threads, x.ExitedThreads
	}
	for _, t := range live {
		add(t, evNone, nil)
	}
	for i := range exited {
		add(exited[i].Task, evExited, &exited[i])
	}
	// Shown and counted, in either view: a process of another user under
	// hidepid=1, say. Its CPU clock gives its time; it has no interval.
	for _, t := range x.Denied {
		rows = append(rows, row{pid: t.PID, total: t.Times.Total(), user: t.Times.User, ker: t.Times.Kernel,
			ev: evDenied, cpu: -1, usr: -1, sys: -1, rss: -1})
	}
	// One figure per process in one refresh: a thread's row read before
	// a busier thread of its process had the figure read again gets it.
	for i := start; i < len(rows); i++ {
		if v, ok := m.rssNext[rows[i].pid]; ok && rows[i].rss >= 0 {
			rows[i].rss = v.bytes
		}
	}
	m.prev, m.next = m.next, m.prev
	m.rssPrev, m.rssNext = m.rssNext, m.rssPrev
	return rows
}

// filter keeps the rows of pid (0: all) whose name holds name (any case).
func filter(rows []row, pid int, name string) []row {
	if pid == 0 && name == "" {
		return rows
	}
	name = strings.ToLower(name)
	out := rows[:0]
	for _, r := range rows {
		if pid != 0 && r.pid != pid {
			continue
		}
		if name != "" && !strings.Contains(strings.ToLower(r.name), name) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// sortRows sorts rows by key, highest first as procps does (reversed:
// lowest first), ties broken by TIME+ and then by id, so that the order
// is total and rows do not swap places between refreshes for nothing.
func sortRows(rows []row, key sortKey, reversed ...bool) {
	rev := len(reversed) > 0 && reversed[0]
	slices.SortFunc(rows, func(a, b row) int {
		c := 0
		switch key {
		case byCPU:
			c = cmp.Compare(b.cpu, a.cpu)
		case byMem:
			c = cmp.Compare(b.rss, a.rss)
		case byPID:
			c = cmp.Or(cmp.Compare(b.id(), a.id()), cmp.Compare(b.pid, a.pid))
		}
		c = cmp.Or(c, cmp.Compare(b.total, a.total), cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid))
		if rev {
			return -c
		}
		return c
	})
}

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
