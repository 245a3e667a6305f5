package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cputime/cputime/internal/names"
)

// JSON output: field names are part of the command's interface.
type jsonThread struct {
	TID          int            `json:"tid"`
	Name         jsonName       `json:"name"`
	CreationTime jsonInstant    `json:"creation_time"`
	ExitTime     jsonOptInstant `json:"exit_time"`
	UserNs       int64          `json:"user_ns"`
	KernelNs     int64          `json:"kernel_ns"`
	Cycles       *uint64        `json:"cycles"` // null without a reference frequency
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
	PID          int      `json:"pid"`
	Name         jsonName `json:"name"`
	CreationTime *string  `json:"creation_time"`
	ExitTime     *string  `json:"exit_time"`
	UserNs       int64    `json:"user_ns"`
	KernelNs     int64    `json:"kernel_ns"`
	Cycles       *uint64  `json:"cycles"`
	// ThreadCount is how many threads the process had when it was read;
	// for an exited process (run), how many were recorded; 0 where that
	// is not known (wait, a process that may not be read).
	ThreadCount int `json:"thread_count"`
	// Threads are the process's threads; null where they were not asked
	// for (the listing without -H/--threads).
	Threads jsonThreads `json:"threads"`
	// AccessDenied (the listing) marks a process, or its threads, that may
	// not be read: a process has only its pid then, and creation_time is
	// null.
	AccessDenied bool `json:"access_denied"`
}

// rfc3339 is RFC 3339 in UTC with all nine digits of the nanoseconds.
const rfc3339 = "2006-01-02T15:04:05.000000000Z07:00"

func jsonTime(t time.Time) string { return string(appendRFC3339(make([]byte, 0, len(rfc3339)), t)) }

// jsonExitCached is t in JSON output, nil when zero, formatted with clock.
func jsonExitCached(t time.Time, clock *rfc3339Cache) *string {
	if t.IsZero() {
		return nil
	}
	s := string(clock.append(make([]byte, 0, len(rfc3339)), t))
	return &s
}

func writeJSON(w io.Writer, records []record, cyc cycler) error {
	out := make(jsonProcesses, 0, len(records))
	for _, r := range records {
		out = append(out, toJSON(r, cyc))
	}
	return encodeJSON(w, out)
}

func toJSON(r record, cyc cycler) jsonProcess {
	var c rfc3339Cache
	return toJSONCached(r, cyc, &c)
}

// toJSONCached is toJSON formatting the process's instants with clock
// (shared by the processes of a tree: most are in the same second).
func toJSONCached(r record, cyc cycler, clock *rfc3339Cache) jsonProcess {
	p := jsonProcess{
		PID:          r.ID,
		Name:         jsonName(r.Name),
		CreationTime: jsonExitCached(r.Times.Creation, clock),
		ExitTime:     jsonExitCached(r.Times.Exit, clock),
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
	for i, t := range r.threads {
		m := r.mark(i)
		p.Threads = append(p.Threads, jsonThread{
			TID:          t.ID,
			Name:         jsonName(t.Name),
			CreationTime: jsonInstant(t.Times.Creation),
			ExitTime:     jsonOptInstant(t.Times.Exit),
			UserNs:       t.Times.User.Nanoseconds(),
			KernelNs:     t.Times.Kernel.Nanoseconds(),
			Cycles:       cyc.json(t.Times.Total()),
			Incomplete:   m.incomplete,
			SplitShared:  m.noTicks,
			EstimatedNs:  m.estimated.Nanoseconds(),
		})
	}
	return p
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
