package top

import (
	"cmp"
	"slices"
	"strings"
	"time"

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
