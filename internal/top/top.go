// Package top implements "cputime top": a live view of processes and
// threads with their exact CPU use over each interval, their creation
// times, and the tasks that appeared and exited since the last refresh,
// built on the sampler package (about one read per unchanged task).
//
// Interactive mode draws full screen on a terminal with raw ANSI escape
// sequences, through termios (golang.org/x/sys/unix) on Linux and the
// console API (golang.org/x/sys/windows) on Windows: the command lives in
// the library module, which depends on golang.org/x/sys alone, so no
// terminal UI library. Batch mode (-b) prints plain columns, or JSON lines
// with --json.
package top

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/names"
	"github.com/cputime/cputime/sampler"
)

const usage = `usage: cputime top [-b] [-n N] [-d SECONDS] [-p PID[,PID...]] [-H] [--json]

A live view of processes (threads with -H) and their exact CPU use, like
procps top. Interactive unless -b.

  -b          batch mode: print each refresh as plain columns (or --json)
  -n N        stop after N refreshes (default: run until interrupted)
  -d SECONDS  interval between refreshes (default 3; decimals allowed)
  -p PID,...  only these processes (repeatable)
  -H          one row per thread instead of per process
  --json      batch: one JSON object per refresh (JSON lines)
  -h          show this help

Columns: PID (TID with -H); %CPU, USR%, SYS%: exact CPU time over the
interval / the interval (100 % = one CPU), split into user and kernel mode;
RES: the process's resident memory (Linux: /proc/PID/statm, read again
when the process ran during the interval; K, M, G are KiB, MiB, GiB; "-"
where unknown); TIME+: exact cumulative CPU time
(minutes:seconds.milliseconds); CREATED:
start (time of day within the last day, else the date); S: state (X:
exited); EVENT: "new" for a task that appeared since the last refresh,
"exit@TIME" for one that exited (its exit instant) or "gone@TIME" (it
exited between the last refresh that saw it and TIME; --json has both
ends), "denied" for a process whose files may
not be read (another user's under hidepid=1: its PID and TIME+ only, from
its CPU clock; counted in the status line); NAME. A -p PID that does not
exist at the first refresh ("no such process"), or that may not be read,
makes the exit status 1 (and where none of them exists, top stops after
that refresh); one that exits later does not. The first refresh has no
interval:
its %CPU columns are "-".

Keys: q quit; Up/Down, PgUp/PgDn, Home/End scroll (a selected row);
H threads on/off; P, M, T, N sort by %CPU, RES, TIME+, PID (R reverses);
1 a line per CPU; f find a name or PID (& the next); k send a signal to
the selected process or a PID (asks which, TERM by default, then y to
confirm); space refresh now; d or s interval; p show one PID (empty:
all); / filter by name (empty: none); ? help. On a terminal narrower
than 100 columns the status line wraps rather than being cut, USR% and
SYS% are left out and CREATED is to the second, so that NAME stays on
screen; column widths do not change from one refresh to the next.
`

const programName = "cputime top"

type options struct {
	batch   bool
	n       int
	delay   time.Duration
	pids    []int
	threads bool
	json    bool
}

func parseArgs(args []string) (options, error) {
	o := options{delay: 3 * time.Second}
	rest, err := o.flags().Parse(args)
	if errors.Is(err, cliflag.ErrHelp) {
		return o, errHelp
	}
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, fmt.Errorf("unexpected argument %s (processes are given with -p)", names.Sanitize(rest[0]))
	}
	if o.json && !o.batch {
		return o, errors.New("--json needs -b")
	}
	return o, nil
}

// flags are top's options: procps top's letters, and --json.
func (o *options) flags() *cliflag.Set {
	s := &cliflag.Set{Interspersed: true}
	s.Bool(&o.json, "--json", "-json")
	s.Bool(&o.batch, "-b")
	s.Bool(&o.threads, "-H")
	s.Func("a number of refreshes", "", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return errors.New("want a positive number of refreshes")
		}
		o.n = n
		return nil
	}, "-n")
	s.Func("seconds, such as 0.5", "", func(v string) error {
		d, err := strconv.ParseFloat(v, 64)
		if err != nil || d < 0 || d > 1e6 || d != d {
			return errors.New("want seconds, such as 0.5")
		}
		o.delay = time.Duration(d * float64(time.Second))
		return nil
	}, "-d")
	s.Func("process ids, such as 12,34", "pid", func(v string) error {
		for f := range strings.SplitSeq(v, ",") {
			pid, err := strconv.ParseInt(f, 10, 32)
			if err != nil || pid <= 0 {
				return fmt.Errorf("invalid PID %q: want a positive decimal number", names.Sanitize(f))
			}
			o.pids = append(o.pids, int(pid))
		}
		return nil
	}, "-p")
	return s
}

// Flags are top's options, as shell completion lists them.
func Flags() []string {
	var o options
	return o.flags().Names()
}

var errHelp = errors.New("help")

// Run runs "cputime top" with args (after "top") and returns its exit
// status.
func Run(stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	o, err := parseArgs(args)
	if err == errHelp {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", programName, err, usage)
		return 2
	}
	if o.batch {
		return runBatch(o, stdout, stderr)
	}
	return runInteractive(o, stdin, stdout, stderr)
}

func newSampler(o options, threads bool) (*sampler.Sampler, error) {
	return sampler.New(sampler.Options{PIDs: o.pids, Threads: threads})
}

// runBatch prints each refresh, like top -b.
func runBatch(o options, stdout, stderr io.Writer) int {
	s, err := newSampler(o, o.threads)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return 1
	}
	defer s.Close()
	w := bufio.NewWriterSize(stdout, 64<<10)
	m := newModel()
	var mach machineReader
	var x sampler.Sample
	var rows []row
	var line []byte
	status := 0
	next := time.Now()
	for i := 0; o.n == 0 || i < o.n; i++ {
		if i > 0 {
			next = next.Add(o.delay)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			} else {
				next = time.Now()
			}
		}
		if err := s.RefreshInto(&x); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", programName, err)
			return 1
		}
		for _, err := range x.Errors {
			fmt.Fprintf(stderr, "%s: %v\n", programName, err)
			if errors.Is(err, cputime.ErrAccessDenied) {
				status = 1 // a process the user named (-p) may not be read
			}
		}
		stop := false
		if x.First {
			if missing := missingPIDs(o.pids, &x); len(missing) > 0 {
				reportMissing(stderr, missing)
				status = 1
				stop = noneLeft(o.pids, missing)
			}
		}
		rows = m.build(&x, o.threads, rows[:0])
		sortRows(rows, byCPU)
		f := frame{at: x.Time, interval: x.Interval, first: x.First, threads: o.threads, rows: rows,
			machine: mach.read(&x), errs: len(x.Errors)}
		f.newN, f.exitedN, f.deniedN = counts(rows)
		if o.json {
			err = writeJSON(w, &f)
		} else {
			line = appendFrame(line[:0], &f, byCPU, 0, 0)
			_, err = w.Write(line)
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: writing output: %v\n", programName, err)
			return 1
		}
		if stop {
			break // nothing to watch
		}
	}
	return status
}

// missingPIDs returns the processes named with -p that the first refresh
// x found neither alive, nor denied, nor failing to read, and that the
// system confirms do not exist.
func missingPIDs(pids []int, x *sampler.Sample) []int {
	var missing []int
	for _, pid := range pids {
		if slices.Contains(missing, pid) || listed(pid, x.Processes) || listed(pid, x.Denied) {
			continue
		}
		if _, err := cputime.ProcessTimes(pid); errors.Is(err, cputime.ErrNotFound) {
			missing = append(missing, pid)
		}
	}
	return missing
}

// noneLeft says whether every process named with -p is missing.
func noneLeft(pids, missing []int) bool {
	for _, pid := range pids {
		if !slices.Contains(missing, pid) {
			return false
		}
	}
	return true
}

func listed(pid int, tasks []sampler.Task) bool {
	for i := range tasks {
		if tasks[i].PID == pid {
			return true
		}
	}
	return false
}

// reportMissing says, in the words of the other subcommands, which named
// processes do not exist.
func reportMissing(w io.Writer, pids []int) {
	for _, pid := range pids {
		fmt.Fprintf(w, "%s: %d: no such process\n", programName, pid)
	}
}

// appendFrame appends the text of a refresh: the status line, a blank
// line, the header and the rows (at most maxRows if positive), each line cut
// at width columns if positive, and a blank line after them in batch mode.
func appendFrame(b []byte, f *frame, sortBy sortKey, width, maxRows int) []byte {
	b = cut(append(b, statusLine(f, sortBy)...), width)
	b = append(b, "\n\n"...)
	ew := eventWidth(f.rows)
	start := len(b)
	b = cutFrom(appendHeader(b, f.threads, ew, true), start, width)
	b = append(b, '\n')
	now := time.Now()
	for i := range f.rows {
		if maxRows > 0 && i >= maxRows {
			break
		}
		start := len(b)
		b = formatRow(b, &f.rows[i], ew, true, now)
		b = cutFrom(b, start, width)
		b = append(b, '\n')
	}
	if maxRows == 0 {
		b = append(b, '\n')
	}
	return b
}

// cut shortens the last line of b (from its last newline) to width columns.
func cut(b []byte, width int) []byte {
	start := strings.LastIndexByte(string(b), '\n') + 1
	return cutFrom(b, start, width)
}

// cutFrom shortens b[start:] to width runes if width is positive.
func cutFrom(b []byte, start, width int) []byte {
	if width <= 0 {
		return b
	}
	n := 0
	for i := range string(b[start:]) {
		if n == width {
			return b[:start+i]
		}
		n++
	}
	return b
}

// JSON lines: the field names are part of the command's interface.
type jsonTask struct {
	PID      int      `json:"pid"`
	TID      *int     `json:"tid"` // null in the process view
	Name     string   `json:"name"`
	State    string   `json:"state"`
	CPU      *float64 `json:"cpu_pct"` // null in the first refresh
	User     *float64 `json:"user_pct"`
	Sys      *float64 `json:"sys_pct"`
	TimeNs   int64    `json:"time_ns"`
	UserNs   int64    `json:"user_ns"`
	KernelNs int64    `json:"kernel_ns"`
	Created  *string  `json:"creation_time"` // null where unknown (access denied)
	New      bool     `json:"new"`
	Exited   bool     `json:"exited"`
	Denied   bool     `json:"access_denied"`   // its files may not be read: pid and times only
	RSSBytes *int64   `json:"rss_bytes"`       // the process's resident memory; null where unknown
	Exit     *string  `json:"exit_time"`       // the exit instant, where known exactly
	LastSeen *string  `json:"last_seen_alive"` // exited: the bracket around the exit
	GoneAt   *string  `json:"first_seen_gone"`
}

type jsonFrame struct {
	Time       string     `json:"time"`
	IntervalNs int64      `json:"interval_ns"`
	First      bool       `json:"first"`
	Threads    bool       `json:"threads"`
	CPUs       int        `json:"cpus"`
	MachinePct *float64   `json:"machine_cpu_pct"` // share of all CPUs
	Tasks      []jsonTask `json:"tasks"`
}

const rfc3339 = "2006-01-02T15:04:05.000000000Z07:00"

func jsonInstant(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(rfc3339)
	return &s
}

func pct(v float64) *float64 {
	if v < 0 {
		return nil
	}
	return &v
}

func writeJSON(w io.Writer, f *frame) error {
	out := jsonFrame{Time: f.at.UTC().Format(rfc3339), IntervalNs: f.interval.Nanoseconds(), First: f.first,
		Threads: f.threads, CPUs: f.machine.cpus, Tasks: make([]jsonTask, 0, len(f.rows))}
	if f.machine.ok && !f.first {
		out.MachinePct = pct(f.machine.user + f.machine.system)
	}
	for i := range f.rows {
		r := &f.rows[i]
		state := "-"
		if r.state != 0 {
			state = string(rune(r.state))
		}
		t := jsonTask{PID: r.pid, Name: r.name, State: state, CPU: pct(r.cpu), User: pct(r.usr), Sys: pct(r.sys),
			TimeNs: r.total.Nanoseconds(), UserNs: r.user.Nanoseconds(), KernelNs: r.ker.Nanoseconds(),
			Created: jsonInstant(r.created), New: r.ev == evNew, Exited: r.ev == evExited, Denied: r.ev == evDenied}
		if r.tid != 0 {
			t.TID = &r.tid
		}
		if r.rss >= 0 {
			t.RSSBytes = &r.rss
		}
		if r.created.IsZero() {
			t.Created = nil
		}
		if r.ev == evExited {
			t.Exit, t.LastSeen, t.GoneAt = jsonInstant(r.exit), jsonInstant(r.lastSeen), jsonInstant(r.goneAt)
		}
		out.Tasks = append(out.Tasks, t)
	}
	return json.NewEncoder(w).Encode(out)
}

// asFile returns v as an *os.File if it is one.
func asFile(v any) (*os.File, bool) {
	f, ok := v.(*os.File)
	return f, ok
}

// Usage is the help of "cputime top".
func Usage() string { return usage }
