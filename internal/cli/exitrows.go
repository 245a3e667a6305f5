package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/taskstats"
)

// exitRow is one line of output: a thread or a process that exited.
type exitRow struct {
	Kind     string `json:"kind"` // "thread", "process"
	ExitTime string `json:"exit_time"`
	// ExitTimeSource: "received" (when the record arrived, typically tens
	// of µs after the exit), or "kernel_second" (the reader fell more than
	// a second behind: the end of the second the kernel dated the record
	// in, an upper bound).
	ExitTimeSource string  `json:"exit_time_source"`
	PID            uint32  `json:"pid"` // the process
	TID            *uint32 `json:"tid"` // the thread; null for a multi-threaded process's record
	PPID           *uint32 `json:"ppid"`
	UID            *uint32 `json:"uid"`
	Name           string  `json:"name"`
	CreationTime   *string `json:"creation_time"`
	ElapsedUs      *uint64 `json:"elapsed_us"`
	UserNs         *uint64 `json:"user_ns"`
	KernelNs       *uint64 `json:"kernel_ns"`
	TotalNs        uint64  `json:"total_ns"`
	TotalExact     bool    `json:"total_exact"` // false: whole ticks (a kernel without CONFIG_TASK_DELAY_ACCT)
	TickUserUs     uint64  `json:"tick_user_us"`
	TickKernelUs   uint64  `json:"tick_kernel_us"`
	ExitCode       *int    `json:"exit_code"`
	Signal         *int    `json:"signal"`
	CoreDumped     bool    `json:"core_dumped"` // false also when no signal ended it
	VoluntarySw    uint64  `json:"voluntary_switches"`
	InvoluntSw     uint64  `json:"involuntary_switches"`

	exit, creation time.Time
	user, kernel   time.Duration
	splitKnown     bool
	err            error // values the kernel could not have produced
}

// exitDrop is the JSON line for records the kernel dropped.
type exitDrop struct {
	Kind         string `json:"kind"` // "dropped"
	Time         string `json:"time"`
	Dropped      uint64 `json:"dropped"`
	DroppedTotal uint64 `json:"dropped_total"`
	Exact        bool   `json:"exact"` // false: at least this many
}

// exitsState is what the stream remembers between messages about
// processes whose last thread has not exited yet: the leader's exit status
// and name (only the leader's record carries the status), and the tick
// samples of the threads seen, for kernels whose process record lacks
// them. Bounded: a listener that starts mid-way, or a process the filter
// hides, leaves entries that are dropped when the map grows too large.
type exitsState struct {
	procs map[uint32]*procMemo
}

type procMemo struct {
	leaderSeen   bool
	exitCode     uint32
	name         string
	utime, stime uint64
	realTotal    uint64
}

const maxProcMemos = 1 << 16

func (st *exitsState) memo(tgid uint32) *procMemo {
	if st.procs == nil {
		st.procs = map[uint32]*procMemo{}
	}
	m := st.procs[tgid]
	if m == nil {
		if len(st.procs) >= maxProcMemos {
			clear(st.procs)
		}
		m = &procMemo{}
		st.procs[tgid] = m
	}
	return m
}

// rows turns one message's records into output rows: a thread record is
// a "thread" row, or a "process" row when it is a process's only thread;
// a process record (sent with its last thread's) is a "process" row that
// takes the name, parent and creation time the last thread's record gives
// and the exit status its leader's record gave.
func (st *exitsState) rows(b taskstats.Batch) []exitRow {
	var last *taskstats.Record // the thread record in the same message
	hasProcess := false
	for i := range b.Records {
		switch b.Records[i].Kind {
		case taskstats.Thread:
			last = &b.Records[i]
		case taskstats.Process:
			hasProcess = true
		}
	}
	var rows []exitRow
	for _, r := range b.Records {
		switch r.Kind {
		case taskstats.Thread:
			rows = append(rows, st.threadRow(r, b.Received, hasProcess))
		case taskstats.Process:
			rows = append(rows, st.processRow(r, last, b.Received))
		}
	}
	return rows
}

func (st *exitsState) threadRow(r taskstats.Record, received time.Time, hasProcess bool) exitRow {
	tgid := r.TGID
	if tgid == 0 { // a kernel before version 12: the thread id stands in
		tgid = r.ID
	}
	whole := !hasProcess && r.Flag&taskstats.AGROUP != 0
	row := baseRow(r.Stats, received)
	row.Kind = "thread"
	if whole {
		row.Kind = "process"
	}
	row.PID = tgid
	tid := r.ID
	row.TID = &tid
	row.Name = r.Comm
	row.PPID, row.UID = ptr(r.PPID), ptr(r.UID)
	row.setExit(received, r.Stats)
	row.creation = row.exit.Add(-time.Duration(r.ETime) * time.Microsecond)
	row.CreationTime, row.ElapsedUs = ptr(jsonTime(row.creation)), ptr(r.ETime)
	leader := r.ID == tgid
	if leader {
		setStatus(&row, r.ExitCode)
	}
	// One thread cannot have run longer than it lived (with slack for the
	// scheduler clock's drift, 0.1 %, and the µs truncation of ac_etime).
	if life := r.ETime * 1000; row.TotalExact && row.TotalNs > life+life/1000+2*uint64(time.Millisecond) {
		row.err = fmt.Errorf("thread %d (%s): %w: %d ns on a CPU in %d µs of life",
			r.ID, sanitize(r.Comm), account.ErrImpossible, row.TotalNs, r.ETime)
	}
	if !whole {
		m := st.memo(tgid)
		if leader {
			m.leaderSeen, m.exitCode, m.name = true, r.ExitCode, r.Comm
		}
		m.utime += r.UTime
		m.stime += r.STime
		m.realTotal += r.CPURunRealTotal
	}
	return row
}

func (st *exitsState) processRow(r taskstats.Record, last *taskstats.Record, received time.Time) exitRow {
	m := st.procs[r.ID]
	delete(st.procs, r.ID)
	s := r.Stats
	// Kernels before the process record summed the tick samples (the
	// threads' own records carry them): use the sums of the threads seen
	// if they account for all of its ticks.
	if s.UTime == 0 && s.STime == 0 && m != nil && s.CPURunRealTotal != 0 && m.realTotal == s.CPURunRealTotal {
		s.UTime, s.STime = m.utime, m.stime
	}
	row := baseRow(s, received)
	if s.UTime == 0 && s.STime == 0 && s.CPURunRealTotal != 0 {
		row.splitKnown, row.UserNs, row.KernelNs = false, nil, nil
	}
	row.Kind = "process"
	row.PID = r.ID
	if last != nil {
		row.Name = last.Comm
		row.PPID, row.UID = ptr(last.PPID), ptr(last.UID)
		row.setExit(received, last.Stats)
		if last.Version >= 12 && last.TGETime != 0 {
			row.creation = row.exit.Add(-time.Duration(last.TGETime) * time.Microsecond)
			row.CreationTime, row.ElapsedUs = ptr(jsonTime(row.creation)), ptr(last.TGETime)
		}
		if last.ID == r.ID {
			setStatus(&row, last.ExitCode)
		}
	} else {
		row.ElapsedUs = nil
	}
	if m != nil && m.leaderSeen {
		setStatus(&row, m.exitCode)
		row.Name = m.name
	}
	return row
}

// baseRow fills the times every row has: the exit (the message's
// arrival), the exact total and its split by the project's rule.
func baseRow(s taskstats.Stats, received time.Time) exitRow {
	row := exitRow{
		exit: received, ExitTime: jsonTime(received), ExitTimeSource: "received",
		TickUserUs: s.UTime, TickKernelUs: s.STime,
		VoluntarySw: s.NVCSW, InvoluntSw: s.NIVCSW,
	}
	t := s.Times()
	total := t.Total
	row.TotalNs, row.TotalExact = total, t.Exact
	e := account.Evidence{UTime: t.UTime, STime: t.STime, RTime: total, KThread: t.KThread}
	if err := account.CheckTicks(e); err != nil || total >= 1<<63 {
		row.err = fmt.Errorf("task %d: %w: runtime %d ns, ticks %d + %d µs", s.PID, account.ErrImpossible, total, s.UTime, s.STime)
		return row
	}
	user, kernel := account.Rule(e)
	row.user, row.kernel, row.splitKnown = time.Duration(user), time.Duration(kernel), true
	row.UserNs, row.KernelNs = ptr(user), ptr(kernel)
	return row
}

// setStatus decodes a wait status as the kernel keeps it (tsk->exit_code):
// the exit status in bits 8-15, or the killing signal in bits 0-6 and the
// core-dump flag in bit 7 (the same layout on every Linux architecture).
// setExit dates the exit by the record's arrival, unless that is later
// than the kernel's own dating allows. The kernel computes ac_btime as
// the wall-clock second of the record minus the whole seconds of
// ac_etime, so the record was made within the second starting at
// ac_btime + ac_etime/1e6 (whole seconds): a record received after that
// second ended waited in the queue, and the second's end bounds its exit.
func (row *exitRow) setExit(received time.Time, s taskstats.Stats) {
	if s.BTime == 0 || s.BTime > math.MaxInt64/2 {
		return
	}
	end := time.Unix(int64(s.BTime+s.ETime/1e6)+1, 0)
	if received.After(end) {
		row.exit, row.ExitTime, row.ExitTimeSource = end, jsonTime(end), "kernel_second"
	}
}

func setStatus(row *exitRow, ws uint32) {
	row.ExitCode, row.Signal, row.CoreDumped = nil, nil, false
	switch sig := int(ws & 0x7f); sig {
	case 0:
		row.ExitCode = ptr(int(ws>>8) & 0xff)
	case 0x7f: // stopped: not an exit status
	default:
		row.Signal = ptr(sig)
		row.CoreDumped = ws&0x80 != 0
	}
}

func ptr[T any](v T) *T { return &v }

func writeExitRow(w io.Writer, r exitRow, asJSON bool, loc *time.Location) error {
	if asJSON {
		return encodeJSONLine(w, r)
	}
	tid := "-"
	if r.TID != nil {
		tid = strconv.FormatUint(uint64(*r.TID), 10)
	}
	ppid := "-"
	if r.PPID != nil {
		ppid = strconv.FormatUint(uint64(*r.PPID), 10)
	}
	user, kernel := "-", "-"
	if r.splitKnown {
		user, kernel = formatMicros(r.user), formatMicros(r.kernel)
	}
	total := formatMicros(time.Duration(r.TotalNs))
	if !r.TotalExact {
		total = "~" + total
	}
	_, err := fmt.Fprintf(w, "%-26s  %-7s %7d %7s %7s %12s %12s %12s  %-26s  %-12s %s\n",
		formatMicroInstant(r.exit, loc), r.Kind, r.PID, tid, ppid, user, kernel, total,
		formatMicroInstant(r.creation, loc), exitStatusText(r), sanitize(r.Name))
	return err
}

func exitStatusText(r exitRow) string {
	switch {
	case r.ExitCode != nil:
		return "exit " + strconv.Itoa(*r.ExitCode)
	case r.Signal != nil && r.CoreDumped:
		return "signal " + strconv.Itoa(*r.Signal) + "+core"
	case r.Signal != nil:
		return "signal " + strconv.Itoa(*r.Signal)
	}
	return "-"
}

// formatMicros prints a CPU time in seconds with microsecond digits: the
// exit records are exact to the ns, and a short thread's cost is µs.
func formatMicros(d time.Duration) string {
	us := d.Microseconds()
	return fmt.Sprintf("%d.%06ds", us/1e6, us%1e6)
}

func formatMicroInstant(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05.000000")
}

// encodeJSONLine writes v as one line of JSON, with the same escaping of
// unprintable runes as encodeJSON: a stream wants one object per line.
func encodeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(escapeUnprintable(b), '\n'))
	return err
}
