package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/timeline"
)

// The writers of --trace and --timeline (variables, so that tests can
// stand in for them; nil makes run say it cannot write that file).
var traceWriter, timelineWriter = timeline.WriteTrace, timeline.WriteHTML

var errNoWriter = errors.New("this build cannot write it")

// writeDrawing writes rec with write into w (an outFile's).
func writeDrawing(w io.Writer, write func(io.Writer, *timeline.Recording) error, rec *timeline.Recording) error {
	switch {
	case rec == nil:
		return errors.New("nothing recorded")
	case write == nil:
		return errNoWriter
	}
	return write(w, rec)
}

func threadInfo(pid int, t timeline.Thread) cputime.ThreadInfo {
	return cputime.ThreadInfo{ID: t.ID, ProcessID: pid, Name: t.Name,
		Times: cputime.Times{Creation: t.Creation, Exit: t.Exit, User: t.User, Kernel: t.Kernel}}
}

func recordedThreads(p timeline.Process) []cputime.ThreadInfo {
	out := make([]cputime.ThreadInfo, 0, len(p.Threads))
	for _, t := range p.Threads {
		out = append(out, threadInfo(p.ID, t))
	}
	return out
}

func processRecord(p timeline.Process) record {
	return record{
		ProcessInfo: cputime.ProcessInfo{ID: p.ID, ParentID: p.Parent, Name: p.Name,
			Times: cputime.Times{Creation: p.Creation, Exit: p.Exit, User: p.User, Kernel: p.Kernel}},
		threads: recordedThreads(p),
		marks:   threadMarks(p),
	}
}

// threadMarks is what the recording says of each of p's threads beside
// its times, by index; nil if nothing.
func threadMarks(p timeline.Process) []threadMark {
	var out []threadMark
	for i, t := range p.Threads {
		if !t.Incomplete && !t.NoTicks && t.Estimated <= 0 {
			continue
		}
		if out == nil {
			out = make([]threadMark, len(p.Threads))
		}
		out[i] = threadMark{incomplete: t.Incomplete, noTicks: t.NoTicks, estimated: max(t.Estimated, 0)}
	}
	return out
}

// childrenJSON is the recursive children of process pid. A process whose
// parent was not recorded (its parent's FORK was lost) hangs under the top
// process, so that no recorded process is left out.
func childrenJSON(rec *timeline.Recording, top int, cyc cycler) jsonChildren {
	kids := map[int][]int{} // parent's index → children's indexes
	index := map[int]int{}
	for i, p := range rec.Processes {
		index[p.ID] = i
	}
	for i, p := range rec.Processes[1:] {
		parent, ok := index[p.Parent]
		if !ok || parent == i+1 {
			parent = 0
		}
		kids[parent] = append(kids[parent], i+1)
	}
	var clock rfc3339Cache
	var build func(i int, depth int) jsonChildren
	build = func(i int, depth int) jsonChildren {
		out := jsonChildren{}
		if depth > len(rec.Processes) {
			return out // a cycle of reused ids: cannot happen, never loop
		}
		for _, k := range kids[i] {
			p := rec.Processes[k]
			out = append(out, jsonChild{jsonProcess: toJSONCached(processRecord(p), cyc, &clock), PPID: p.Parent, Children: build(k, depth+1)})
		}
		return out
	}
	return build(0, 0)
}

// recordingProblems is what run's record lacks, in sentences with counts:
// the recorder's, or why there is no recording, or what the job missed.
func recordingProblems(r runRecord) []string {
	p := []string{}
	switch {
	case r.recording == nil && r.recErr != nil:
		p = append(p, "the tree was not recorded: "+r.recErr.Error())
	case r.recording == nil && r.job == nil:
		p = append(p, "the tree was not recorded")
	case r.job != nil:
		if n := len(r.job.Missed); n > 0 {
			p = append(p, fmt.Sprintf("%d processes were gone before they could be opened: in the totals, not among the children", n))
		}
		if r.recording != nil {
			if n := runningProcesses(r.recording); n > 0 {
				p = append(p, fmt.Sprintf("%d processes were still running when %d exited: their times are as of then", n, r.ID))
			}
		}
	default:
		p = append(p, r.stats.Problems...)
	}
	return p
}

func recordingJSON(r runRecord) *jsonRecording {
	j := &jsonRecording{LostRecords: r.stats.LostRecords, IncompleteThreads: r.stats.Incomplete, Source: r.stats.Source,
		SourceNote: r.stats.SourceNote, Events: map[bool]string{true: "system", false: "inherited"}[r.stats.SystemWide], StealNs: r.stats.Steal.Nanoseconds(), ExcessNs: r.stats.Excess.Nanoseconds(), ShortfallNs: r.stats.Shortfall.Nanoseconds(),
		RunningThreads: r.stats.Running, CorruptStretches: r.stats.Corrupt,
		ContextSwap: r.stats.SwitchFast, BufferBytes: r.stats.BufferBytes,
		Processes: len(r.recording.Processes)}
	for _, p := range r.recording.Processes {
		j.Threads += len(p.Threads)
	}
	if r.job != nil {
		missed, running, joined := len(r.job.Missed), runningProcesses(r.recording), r.job.Joined
		j.MissedProcesses, j.MissedPIDs, j.RunningProcesses, j.JobProcesses = &missed, r.job.Missed, &running, &joined
		j.Note = r.job.Note
	}
	return j
}

// runningProcesses counts the recorded processes that had not exited.
func runningProcesses(rec *timeline.Recording) int {
	n := 0
	for _, p := range rec.Processes {
		if p.Exit.IsZero() {
			n++
		}
	}
	return n
}

// topProcesses is how many of the processes that used the most CPU the
// human output names.
const topProcesses = 5

// writeRecording writes the human account of the recorded tree: counts in
// time -v's manner, the processes that used the most CPU, the use by
// command name (bc), and with --tree every process and thread.
func writeRecording(w io.Writer, r runRecord, bc []timeline.CommandUse, loc *time.Location, cyc cycler) error {
	if r.recording == nil {
		if r.recErr != nil {
			_, err := fmt.Fprintf(w, "\tChildren: not recorded (%v)\n", r.recErr)
			return err
		}
		return nil
	}
	if p := recordingProblems(r); len(p) > 0 {
		fmt.Fprintf(w, "\tWARNING: the record is incomplete: %s\n", strings.Join(p, "; "))
	}
	rec := r.recording
	threads := 0
	var cpu time.Duration
	for _, p := range rec.Processes[1:] {
		threads += len(p.Threads)
		cpu += p.User + p.Kernel
	}
	threads += len(rec.Processes[0].Threads)
	cpu += r.Times.Total()
	if r.job != nil {
		// A job follows processes, not threads, and loses no records.
		fmt.Fprintf(w, "\tProcesses recorded: %d (the job counted %d)\n\tCPU time recorded (every process's own): %s\n", len(rec.Processes), r.job.Joined, formatDuration(cpu))
		if len(r.job.Missed) > 0 {
			fmt.Fprintf(w, "\tProcesses gone before they could be opened: %d %v\n", len(r.job.Missed), r.job.Missed)
		}
		if n := runningProcesses(rec); n > 0 {
			fmt.Fprintf(w, "\tProcesses still running when %d exited: %d\n", r.ID, n)
		}
		if r.job.Note != "" {
			fmt.Fprintf(w, "\tNote: %s\n", r.job.Note)
		}
	} else {
		fmt.Fprintf(w, "\tProcesses recorded: %d\n\tThreads recorded: %d\n\tCPU time recorded (every process's own): %s\n", len(rec.Processes), threads, formatDuration(cpu))
		fmt.Fprintf(w, "\tLost records: %d\n", r.stats.LostRecords)
		if r.stats.Corrupt > 0 {
			fmt.Fprintf(w, "\tStretches of records written over by the kernel (each lost one or more): %d\n", r.stats.Corrupt)
		}
	}
	if r.stats.Incomplete > 0 {
		fmt.Fprintf(w, "\tThreads with incomplete final counts: %d\n", r.stats.Incomplete)
	}
	if r.stats.Running > 0 {
		fmt.Fprintf(w, "\tThreads still running when %d exited: %d\n", r.ID, r.stats.Running)
	}
	order := make([]timeline.Process, len(rec.Processes))
	copy(order, rec.Processes)
	// The top process as its own record has it (one answer per task).
	order[0].Creation, order[0].Exit, order[0].User, order[0].Kernel = r.Times.Creation, r.Times.Exit, r.Times.User, r.Times.Kernel
	slices.SortStableFunc(order, func(a, b timeline.Process) int { return cmp.Compare(b.User+b.Kernel, a.User+a.Kernel) })
	if len(order) > 1 {
		fmt.Fprintf(w, "most CPU (own threads, without children):\n")
		tw := newTable(w)
		fmt.Fprint(tw, "PID\tPPID\tTHREADS\tUSER\tKERNEL\tELAPSED\t  NAME\n")
		for _, p := range order[:min(topProcesses, len(order))] {
			elapsed := "-"
			if !p.Exit.IsZero() {
				elapsed = formatDuration(p.Exit.Sub(p.Creation))
			}
			threads := strconv.Itoa(len(p.Threads))
			if r.job != nil {
				threads = "-" // not followed
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t  %s\n", p.ID, p.Parent, threads,
				formatDuration(p.User), formatDuration(p.Kernel), elapsed, sanitize(p.Name))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeByCommand(w, r, bc); err != nil {
		return err
	}
	if !r.detail {
		return nil
	}
	records := make([]record, 0, len(rec.Processes))
	for _, p := range rec.Processes {
		records = append(records, processRecord(p))
	}
	// The top process as its own record has it (one answer per task).
	records[0].Times, records[0].threads = r.Times, r.threads
	fmt.Fprintln(w)
	if r.job != nil {
		return writeJobProcesses(w, records, loc)
	}
	return writeTreeTables(w, records, loc, cyc)
}

// writeJobProcesses is writeTreeTables for a job, which follows processes,
// not their threads.
func writeJobProcesses(w io.Writer, records []record, loc *time.Location) error {
	for _, r := range records {
		_, err := fmt.Fprintf(w, "process %d (%s), parent %d: created %s, exited %s, user %s, kernel %s\n",
			r.ID, sanitize(r.Name), r.ParentID, formatInstant(r.Times.Creation, loc), formatInstant(r.Times.Exit, loc),
			formatDuration(r.Times.User), formatDuration(r.Times.Kernel))
		if err != nil {
			return err
		}
	}
	return nil
}

// writeTreeTables is writeThreadTables with exit times and each process's
// parent.
func writeTreeTables(w io.Writer, records []record, loc *time.Location, cyc cycler) error {
	for i, r := range records {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "process %d (%s), parent %d: created %s, exited %s, user %s, kernel %s, %d threads\n",
			r.ID, sanitize(r.Name), r.ParentID, formatInstant(r.Times.Creation, loc), formatInstant(r.Times.Exit, loc),
			formatDuration(r.Times.User), formatDuration(r.Times.Kernel), len(r.threads))
		tw := newTable(w)
		fmt.Fprint(tw, "TID\tUSER\tKERNEL\tCYCLES\tCREATED\tEXITED\t  NAME\n")
		for _, t := range r.threads {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t  %s\n", t.ID,
				formatDuration(t.Times.User), formatDuration(t.Times.Kernel), cyc.text(t.Times.Total()),
				formatInstant(t.Times.Creation, loc), formatInstant(t.Times.Exit, loc), sanitize(t.Name))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
