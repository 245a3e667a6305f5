// Package cli implements the cputime command: listing processes and threads
// with their Win32-style times, as text tables or JSON.
package cli

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/cliflag"
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
	// Exits opens the exit records "cputime exits" streams; nil: the
	// kernel's (taskstats).
	Exits func() (ExitStream, error)
	// Now reads the wall clock where a command dates a report of its own
	// (exits' last count of dropped records); nil: time.Now.
	Now func() time.Time
}

// usageText is the usage with the list of commands.
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
		case "--version", "-version":
			return versionCommand(env, args[1:])
		}
		if c, ok := findCommand(args[0]); ok {
			return c.run(env, args[1:])
		}
		if looksLikeCommand(args[0]) {
			return unknownCommand(env, args[0])
		}
	}
	var o listingOptions
	args, status, done := parseOptions(env, "", usageText(), o.flags(), args)
	if done {
		return status
	}
	if o.version {
		return versionCommand(env, nil)
	}
	var pids []int
	for _, a := range args {
		pid, err := parsePID(a)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
			return exitUsage
		}
		pids = append(pids, pid)
	}
	asJSON, threads := o.json, o.threads
	return run(env, asJSON, threads || len(pids) > 0, pids)
}

// listingOptions are the options of the command without a subcommand.
type listingOptions struct{ json, threads, version bool }

func (o *listingOptions) flags() *cliflag.Set {
	s := &cliflag.Set{Interspersed: true}
	s.Bool(&o.json, "--json", "-json")
	s.Bool(&o.threads, "-H", "--threads", "-threads")
	s.Bool(&o.version, "--version", "-version")
	return s
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
	// marks are what a recording says of each of threads (run, where
	// the tree was recorded), by index; nil elsewhere.
	marks []threadMark
}

// threadMark is what a recording says of one thread beside its times: its
// final count did not all arrive (incomplete), its split had no tick
// evidence of its own (noTicks), and the estimated part of its times.
// By index, not by thread id: an id reused within a process is two
// threads.
type threadMark struct {
	incomplete, noTicks bool
	estimated           time.Duration
}

// mark returns what the recording says of thread i (zero: nothing).
func (r *record) mark(i int) threadMark {
	if i < len(r.marks) {
		return r.marks[i]
	}
	return threadMark{}
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
