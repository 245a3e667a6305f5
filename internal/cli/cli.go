// Package cli implements the cputime command: listing processes and threads
// with their Win32-style times, as text tables or JSON.
package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/names"
	"github.com/cputime/cputime/internal/top"
)

// Source is where the command gets its records: the live system, or fixed
// records in tests.
type Source interface {
	Processes() iter.Seq2[cputime.ProcessInfo, error]
	Process(pid int) (cputime.ProcessInfo, error)
	Threads(pid int) iter.Seq2[cputime.ThreadInfo, error]
}

// System is the Source of the machine we run on.
type System struct{}

func (System) Processes() iter.Seq2[cputime.ProcessInfo, error] { return cputime.Processes() }

func (System) Process(pid int) (cputime.ProcessInfo, error) {
	p, err := cputime.ProcessInfoOf(pid)
	return p, explainID(pid, err)
}

func (System) Threads(pid int) iter.Seq2[cputime.ThreadInfo, error] {
	return func(yield func(cputime.ThreadInfo, error) bool) {
		for t, err := range cputime.Threads(pid) {
			if !yield(t, explainID(pid, err)) {
				return
			}
		}
	}
}

// notProcessError marks the failure to read a PID that is a thread's id.
type notProcessError struct {
	id, owner int
	err       error
}

func (e *notProcessError) Error() string {
	return fmt.Sprintf("%d: is a thread of process %d, not a process", e.id, e.owner)
}

func (e *notProcessError) Unwrap() error { return e.err }

// explainID returns err, marked as a notProcessError where id, which failed
// to read as a process, is the id of another process's thread.
func explainID(id int, err error) error {
	if err == nil || errors.Is(err, cputime.ErrAccessDenied) {
		return err
	}
	if owner := processOfThread(id); owner > 0 {
		return &notProcessError{id: id, owner: owner, err: err}
	}
	return err
}

// Env is what a run of the command sees of the world.
type Env struct {
	Stdin          io.Reader // for commands that cputime run starts
	Stdout, Stderr io.Writer
	Source         Source
	Location       *time.Location // for instants in human output
	Cycles         Cycles         // reference frequency and idle cycles; nil: the live system
}

const usage = `usage: cputime [--json] [-H] [PID...]
       cputime COMMAND [ARG...]

With no PID, lists every process, most CPU time first (-H, --threads: with
each process's threads). With PIDs, shows each process and its threads.

Commands:
%COMMANDS%
"cputime help COMMAND" or "cputime COMMAND -h" shows a command's help;
"cputime completion bash" prints a bash completion script (zsh too).

  --json       print JSON: an array with one object per process (its
               threads with -H, or when PIDs are given; else "threads" is
               null)
  -H, --threads  list each process's threads (PIDs given: always)
  --version    print the version (as "cputime version")
  -h, --help   show this help

Times: USER and KERNEL are CPU time in user and kernel mode (exact total,
split in the kernel's sampled ratio); CREATED is the wall-clock start.
CYCLES is the cycle time in reference cycles (QueryThreadCycleTime,
QueryProcessCycleTime): on Linux exactly USER + KERNEL times the
reference frequency ("cputime cpus" shows it); on Windows a process's is
the system's own count, a thread's is derived from its times. Not core
cycles, and not to be converted to time.

Names are printed as ps prints them: control characters, invalid UTF-8
and invisible or bidi formatting characters become "?". JSON keeps them,
escaped. docs/cli.md describes every command, option and JSON field.
`

const runUsage = `usage: cputime run [--json] [-o FILE] [--tree] [--trace FILE] [--timeline FILE]
                   [--] CMD [ARG...]

run starts CMD, waits for it, and prints its record with its exit time and
exact final times (on stderr, or to FILE), then exits with CMD's status.
The record's times are the top process's own; its TOTAL (total_user_ns,
total_kernel_ns) is the whole tree, CMD and the descendants it reaped, as
time(1) reports it (to 1 us), with the orphans run reaped as the tree's
subreaper (a daemon that double-forked). Like time -v, run also reports
how CMD ended (exit code, or signal and core dump), the wall time, %CPU,
the maximum RSS and the context switches. SIGTERM and SIGHUP are passed on
to CMD, SIGINT and SIGQUIT too unless the terminal sent them to CMD
itself. Output files are created before CMD starts.
Where the system allows it (Linux, perf_event_paranoid <= 2), run also
records every process and thread of the tree with creation, exit and final
times (to within a few us per context switch), even those that live under
a millisecond: "children" in the JSON (recursive, each with its threads),
and the processes that used the most CPU in the text. --tree requires the
recording and lists every process and thread; --trace FILE writes it as a
Chrome trace (Perfetto), --timeline FILE as an HTML timeline (processes
collapsed into summary lanes, a CPU-over-time lane for the tree, search,
zoom and pan). On Windows, CMD runs in a job object of its own: TOTAL is
the job's accounting (every process ever in it, in clock ticks) and
"children" its processes, without their threads.

  --json           print the record as one JSON object
  -o, --output F   write the record to file F instead of stderr
  --tree           list every process and thread of the tree
  --trace F        write the recording as Chrome trace-event JSON (Perfetto)
  --timeline F     write the recording as an HTML timeline
  -h, --help       show this help
`

const waitUsage = `usage: cputime wait [--json] PID

wait waits until process PID, which need not be our child, exits, and
prints its final record, with the tree's total as far as a non-parent can
see it (its reaped descendants, in 10 ms ticks).

  --json      print the record as one JSON object
  -h, --help  show this help
`

// A registered subcommand: one that lives outside this module's
// dependencies (the exporter, which needs a Prometheus client), added by
// the main package that links it in.
type subcommand struct {
	run  func(env Env, args []string) int
	help string
}

var registered = map[string]subcommand{}

// Register adds the subcommand name, run with the arguments after its
// name; help is appended to the usage text. It is meant for main's init,
// before Run; registering a name twice or a built-in name panics.
func Register(name string, run func(env Env, args []string) int, help string) {
	switch name {
	case "run", "wait", "cpus", "top", "exits":
		panic("cli: Register: " + name + " is a built-in subcommand")
	}
	if _, dup := registered[name]; dup {
		panic("cli: Register: " + name + " registered twice")
	}
	registered[name] = subcommand{run: run, help: help}
}

// usageText is the usage with the list of commands, the registered
// subcommands (serve) among them.
func usageText() string {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	return strings.Replace(usage, "%COMMANDS%\n", b.String(), 1)
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1 // some process could not be read; the others were printed
	exitUsage   = 2
	programName = "cputime"
)

// Run runs the command with args (without the program name) and returns its
// exit status.
func Run(env Env, args []string) int {
	if env.Location == nil {
		env.Location = time.Local
	}
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCommand(env, args[1:])
		case "wait":
			return waitCommand(env, args[1:])
		case "cpus":
			return runCPUs(env, args[1:])
		case "top":
			return top.Run(env.Stdin, env.Stdout, env.Stderr, args[1:])
		case "exits":
			return exitsCommand(env, args[1:])
		case "help":
			return helpCommand(env, args[1:])
		case "version", "--version", "-version":
			return versionCommand(env, args[1:])
		case "completion":
			return completionCommand(env, args[1:])
		}
		if c, ok := registered[args[0]]; ok {
			return c.run(env, args[1:])
		}
		if looksLikeCommand(args[0]) {
			return unknownCommand(env, args[0])
		}
	}
	asJSON, threads, flagsDone := false, false, false
	var pids []int
	for _, a := range args {
		isFlag := !flagsDone && isOption(a)
		switch {
		case !isFlag:
			pid, err := parsePID(a)
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
				return exitUsage
			}
			pids = append(pids, pid)
		case a == "--":
			flagsDone = true
		case a == "--json" || a == "-json":
			asJSON = true
		case a == "-H" || a == "--threads" || a == "-threads":
			threads = true
		case a == "--version" || a == "-version":
			return versionCommand(env, nil)
		case a == "-h" || a == "--help" || a == "-help":
			fmt.Fprint(env.Stdout, usageText())
			return exitOK
		default:
			fmt.Fprintf(env.Stderr, "%s: %s\n(\"cputime -h\" shows the options)\n", programName, unknownOption("", a))
			return exitUsage
		}
	}
	return run(env, asJSON, threads || len(pids) > 0, pids)
}

// looksLikeCommand reports whether the first argument a is meant as a
// command: a word, not a PID (digits), not an option. Words that are
// neither get "unknown command", not "invalid PID".
func looksLikeCommand(a string) bool {
	if a == "" || a[0] == '-' || a[0] >= '0' && a[0] <= '9' || a[0] == '+' || a[0] == ' ' {
		return false
	}
	for _, r := range a {
		if !unicode.IsLetter(r) && r != '-' && r != '_' && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// isOption reports whether a looks like an option rather than a PID: a
// negative number is a PID, for parsePID to reject clearly.
func isOption(a string) bool {
	if _, err := strconv.Atoi(a); err == nil {
		return false
	}
	return strings.HasPrefix(a, "-") && a != "-"
}

// parsePID accepts a PID as ps and kill print it: decimal digits, no sign,
// no spaces, no leading zero, within the kernel's range of ids.
func parsePID(s string) (int, error) {
	bad := func(why string) (int, error) {
		return 0, fmt.Errorf("invalid PID %q: %s", sanitize(s), why)
	}
	if s == "" {
		return bad("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return bad("want a positive decimal number (digits only, no sign or spaces)")
		}
	}
	if s[0] == '0' {
		if strings.Trim(s, "0") == "" {
			return bad("PIDs start at 1")
		}
		return bad("leading zero")
	}
	pid, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return bad("too large")
	}
	return int(pid), nil
}

// describeErr is the one sentence printed after "cputime: " when task id
// could not be read (pass library errors through explainID first), the same
// in every subcommand: the id, then the cause,
// each once ("4242: no such process", "1235: is a thread of process 1234,
// not a process", "1: access denied").
func describeErr(id int, err error) string {
	var thread *notProcessError
	switch {
	case errors.As(err, &thread):
		return thread.Error()
	case errors.Is(err, cputime.ErrNotFound):
		return fmt.Sprintf("%d: no such process", id)
	case errors.Is(err, cputime.ErrAccessDenied):
		return fmt.Sprintf("%d: access denied", id)
	}
	// Other causes keep the library's words, which name the task already.
	msg := err.Error()
	if strings.Contains(msg, strconv.Itoa(id)) {
		return msg
	}
	return fmt.Sprintf("%d: %s", id, msg)
}

// record is one process with its threads: the unit of both outputs.
type record struct {
	cputime.ProcessInfo
	threads []cputime.ThreadInfo
	// denied marks a process of the listing that may not be read (access
	// denied): only its ID is known. threadsDenied: its threads may not be.
	denied, threadsDenied bool
	// noThreads: the threads were not asked for (JSON null, not []).
	noThreads bool
	// incomplete holds the threads a recording saw exit without their
	// whole final count (run, where the tree was recorded); noTicks those
	// whose split had no tick evidence of their own.
	incomplete, noTicks map[int]bool
	estimated           map[int]time.Duration
}

func run(env Env, asJSON, withThreads bool, pids []int) int {
	status := exitOK
	fail := func(msg string) {
		fmt.Fprintf(env.Stderr, "%s: %s\n", programName, msg)
		status = exitFailed
	}
	var records []record
	denied := 0
	if len(pids) == 0 {
		for p, err := range env.Source.Processes() {
			if err != nil && errors.Is(err, cputime.ErrAccessDenied) && p.ID > 0 {
				// Shown marked and counted; not a failure of a listing
				// nobody asked to cover that process.
				records = append(records, record{ProcessInfo: cputime.ProcessInfo{ID: p.ID}, denied: true})
				denied++
				continue
			}
			if err != nil {
				fail(err.Error())
				continue
			}
			records = append(records, record{ProcessInfo: p})
		}
		slices.SortFunc(records, func(a, b record) int {
			return cmp.Or(cmp.Compare(b.Times.Total(), a.Times.Total()), cmp.Compare(a.ID, b.ID))
		})
	} else {
		for _, pid := range pids {
			p, err := env.Source.Process(pid)
			if err != nil {
				fail(describeErr(pid, err))
				continue
			}
			records = append(records, record{ProcessInfo: p})
		}
	}
	for i := range records {
		records[i].noThreads = !withThreads
	}
	if withThreads {
		for i := range records {
			r := &records[i]
			if r.denied {
				continue
			}
			for t, err := range env.Source.Threads(r.ID) {
				if err != nil {
					if len(pids) == 0 && errors.Is(err, cputime.ErrNotFound) {
						break // exited since it was listed
					}
					if len(pids) == 0 && errors.Is(err, cputime.ErrAccessDenied) {
						r.threadsDenied = true
						denied++
						break
					}
					fail(describeErr(r.ID, err))
					if errors.Is(err, cputime.ErrNotFound) || errors.Is(err, cputime.ErrAccessDenied) {
						break // the process, not one thread: said once
					}
					continue
				}
				r.threads = append(r.threads, t)
			}
		}
	}
	// One buffer for the whole output: the tables write cell by cell.
	out := bufio.NewWriterSize(env.Stdout, 64<<10)
	var err error
	cyc := newCycler(env)
	switch {
	case asJSON:
		err = writeJSON(out, records, cyc)
	case !withThreads:
		err = writeProcessTable(out, records, env.Location, cyc)
	default:
		err = writeThreadTables(out, records, env.Location, cyc)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
		return exitFailed
	}
	if denied > 0 {
		noun := "processes"
		if denied == 1 {
			noun = "process"
		}
		fmt.Fprintf(env.Stderr, "%s: %d %s could not be read: access denied (shown as such)\n", programName, denied, noun)
	}
	return status
}

// JSON output: field names are part of the command's interface.
type jsonThread struct {
	TID          int     `json:"tid"`
	Name         string  `json:"name"`
	CreationTime string  `json:"creation_time"`
	ExitTime     *string `json:"exit_time"`
	UserNs       int64   `json:"user_ns"`
	KernelNs     int64   `json:"kernel_ns"`
	Cycles       *uint64 `json:"cycles"` // null without a reference frequency
	// Incomplete (run, recorded) says the thread's final count did not
	// all arrive: its times are short of its own by what was lost.
	// False outside run.
	Incomplete bool `json:"incomplete"`
	// SplitShared (run, recorded) says the thread lived too briefly for
	// tick evidence of its own split: its user and kernel times are its
	// share of the tree's kernel time that no other thread's ticks
	// account for (wait4's). With taskstats every exited task has the
	// kernel's own ticks, and none carries it. False outside run.
	SplitShared bool `json:"split_shared"`
	// EstimatedNs (run, recorded) is the part of the thread's time no
	// exact source gave (the stretch after its last tick, from perf's
	// count; a process's share of the tree's exit remainder): the rest
	// is the kernel's own accounting. 0 outside run.
	EstimatedNs int64 `json:"estimated_ns"`
}

type jsonProcess struct {
	PID          int     `json:"pid"`
	Name         string  `json:"name"`
	CreationTime *string `json:"creation_time"`
	ExitTime     *string `json:"exit_time"`
	UserNs       int64   `json:"user_ns"`
	KernelNs     int64   `json:"kernel_ns"`
	Cycles       *uint64 `json:"cycles"`
	// ThreadCount is how many threads the process had when it was read;
	// for an exited process (run), how many were recorded; 0 where that
	// is not known (wait, a process that may not be read).
	ThreadCount int `json:"thread_count"`
	// Threads are the process's threads; null where they were not asked
	// for (the listing without -H/--threads).
	Threads []jsonThread `json:"threads"`
	// AccessDenied (the listing) marks a process, or its threads, that may
	// not be read: a process has only its pid then, and creation_time is
	// null.
	AccessDenied bool `json:"access_denied"`
}

// rfc3339 is RFC 3339 in UTC with all nine digits of the nanoseconds.
const rfc3339 = "2006-01-02T15:04:05.000000000Z07:00"

func jsonTime(t time.Time) string { return t.UTC().Format(rfc3339) }

func jsonExit(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := jsonTime(t)
	return &s
}

func writeJSON(w io.Writer, records []record, cyc cycler) error {
	out := make([]jsonProcess, 0, len(records))
	for _, r := range records {
		out = append(out, toJSON(r, cyc))
	}
	return encodeJSON(w, out)
}

func toJSON(r record, cyc cycler) jsonProcess {
	p := jsonProcess{
		PID:          r.ID,
		Name:         r.Name,
		CreationTime: jsonExit(r.Times.Creation),
		ExitTime:     jsonExit(r.Times.Exit),
		UserNs:       r.Times.User.Nanoseconds(),
		KernelNs:     r.Times.Kernel.Nanoseconds(),
		Cycles:       cyc.processJSON(r.ProcessInfo),
		ThreadCount:  r.ProcessInfo.Threads,
		AccessDenied: r.denied || r.threadsDenied,
	}
	if !r.noThreads {
		p.Threads = make([]jsonThread, 0, len(r.threads))
	}
	if p.ThreadCount == 0 {
		p.ThreadCount = len(r.threads)
	}
	if r.denied {
		p.CreationTime = nil
	}
	for _, t := range r.threads {
		p.Threads = append(p.Threads, jsonThread{
			TID:          t.ID,
			Name:         t.Name,
			CreationTime: jsonTime(t.Times.Creation),
			ExitTime:     jsonExit(t.Times.Exit),
			UserNs:       t.Times.User.Nanoseconds(),
			KernelNs:     t.Times.Kernel.Nanoseconds(),
			Cycles:       cyc.json(t.Times.Total()),
			Incomplete:   r.incomplete[t.ID],
			SplitShared:  r.noTicks[t.ID],
			EstimatedNs:  r.estimated[t.ID].Nanoseconds(),
		})
	}
	return p
}

// encodeJSON writes v as indented JSON with every rune a terminal could act
// on written as a \uXXXX escape: encoding/json escapes C0 controls but
// leaves DEL, C1 controls (U+009B) and bidi overrides (U+202E) raw. The
// decoded strings are unchanged (names exact, except that encoding/json
// turns each byte of invalid UTF-8 into U+FFFD).
// indentUpTo is the largest JSON output encodeJSON indents.
const indentUpTo = 256 << 10

func encodeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// Indented for the eye, up to a size an eye reads: a record of
	// thousands of tasks is for tools, and indenting it took as long as
	// encoding it (run --tree of 20,000 threads: 30 ms of 60).
	if len(b) <= indentUpTo {
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "  "); err == nil {
			b = ind.Bytes()
		}
	}
	_, err = w.Write(append(escapeUnprintable(b), '\n'))
	return err
}

// escapeUnprintable escapes the runes of JSON text b that are not
// printable; outside strings, JSON holds only printable ASCII, spaces and
// newlines, so every such rune is inside a string.
func escapeUnprintable(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		if c := b[i]; c >= 0x20 && c < 0x7f || c == '\n' { // the usual byte, without decoding
			if out != nil {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r < utf8.RuneSelf && r >= 0x20 && r != 0x7f || r == '\n' || r != utf8.RuneError && unicode.IsPrint(r) || r == utf8.RuneError && size > 1 {
			if out != nil {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+64), b[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		} else {
			out = fmt.Appendf(out, "\\u%04x", r)
		}
		i += size
	}
	if out == nil {
		return b
	}
	return out
}

// formatDuration prints a CPU time with millisecond digits: 0.012s, 1.234s,
// 2m03.456s, 1h02m03.456s.
func formatDuration(d time.Duration) string {
	ms := d.Milliseconds()
	h, ms := ms/3_600_000, ms%3_600_000
	m, ms := ms/60_000, ms%60_000
	s, ms := ms/1000, ms%1000
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02d.%03ds", h, m, s, ms)
	case m > 0:
		return fmt.Sprintf("%dm%02d.%03ds", m, s, ms)
	}
	return fmt.Sprintf("%d.%03ds", s, ms)
}

func formatInstant(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05.000")
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func writeProcessTable(w io.Writer, records []record, loc *time.Location, cyc cycler) error {
	tw := newTable(w)
	fmt.Fprint(tw, "PID\tTHREADS\tUSER\tKERNEL\tCYCLES\tCREATED\t  NAME\n")
	for _, r := range records {
		if r.denied {
			fmt.Fprintf(tw, "%d\t-\t-\t-\t-\t-\t  (access denied)\n", r.ID)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t  %s\n", r.ID, r.ProcessInfo.Threads,
			formatDuration(r.Times.User), formatDuration(r.Times.Kernel), cyc.processText(r.ProcessInfo),
			formatInstant(r.Times.Creation, loc), sanitize(r.Name))
	}
	return tw.Flush()
}

func writeThreadTables(w io.Writer, records []record, loc *time.Location, cyc cycler) error {
	for i, r := range records {
		if i > 0 {
			fmt.Fprintln(w)
		}
		noun := "threads"
		if len(r.threads) == 1 {
			noun = "thread"
		}
		fmt.Fprintf(w, "process %d (%s): created %s, user %s, kernel %s, cycles %s, %d %s\n",
			r.ID, sanitize(r.Name), formatInstant(r.Times.Creation, loc),
			formatDuration(r.Times.User), formatDuration(r.Times.Kernel), cyc.processText(r.ProcessInfo), len(r.threads), noun)
		tw := newTable(w)
		fmt.Fprint(tw, "TID\tUSER\tKERNEL\tCYCLES\tCREATED\t  NAME\n")
		for _, t := range r.threads {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t  %s\n", t.ID,
				formatDuration(t.Times.User), formatDuration(t.Times.Kernel), cyc.text(t.Times.Total()),
				formatInstant(t.Times.Creation, loc), sanitize(t.Name))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// sanitize makes a task name safe for a terminal, as ps prints names (see
// package names). Every text output prints names through it; JSON keeps the
// exact name, which encoding/json escapes.
func sanitize(name string) string { return names.Sanitize(name) }
