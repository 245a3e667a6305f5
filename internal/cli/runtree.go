package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/recorder"
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

// treeUse is where the recorded tree's CPU went, by command name and
// over time, with the top process's times as its own record has them (one
// answer per task), and the average over the wall-clock time where the
// tree's total is known (cpu_percent's). Nothing without a recording; no
// parallelism for a job, which follows no threads.
func treeUse(r runRecord) ([]timeline.CommandUse, *timeline.Parallelism) {
	if r.recording == nil || len(r.recording.Processes) == 0 {
		return nil, nil
	}
	rec := *r.recording
	rec.Processes = slices.Clone(rec.Processes)
	rec.Processes[0].User, rec.Processes[0].Kernel = r.Times.User, r.Times.Kernel
	bc := timeline.ByCommand(&rec)
	if r.job != nil {
		return bc, nil
	}
	pa := timeline.ParallelismOf(&rec)
	if r.tree.valid && r.wall > 0 {
		pa.Average = float64(r.tree.User+r.tree.Kernel) / float64(r.wall)
	}
	return bc, &pa
}

// treeUseJSON fills in where the tree's CPU and memory went (run only).
func treeUseJSON(j *jsonRun, r runRecord) {
	if m := r.memory; m != nil {
		kib, source := m.PeakKiB, m.Source
		j.TreePeakMemoryKiB, j.TreePeakMemorySource = &kib, &source
	}
	bc, pa := treeUse(r)
	if bc != nil {
		j.ByCommand = make([]jsonCommand, len(bc))
		for i, c := range bc {
			j.ByCommand[i] = jsonCommand{Name: jsonName(c.Name), Processes: c.Processes, Threads: c.Threads,
				UserNs: c.User.Nanoseconds(), KernelNs: c.Kernel.Nanoseconds(), PeakConcurrent: c.PeakConcurrent}
		}
	}
	if pa != nil {
		round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
		j.Parallelism = &jsonParallelism{Average: round(pa.Average), Peak: round(pa.Peak), PeakWindowNs: pa.Window.Nanoseconds(),
			PeakFromSamples: pa.FromSamples, PeakThreadsAlive: pa.PeakThreads}
	}
}

// writeTreeUse writes the tree's peak memory and how parallel it ran, in
// time -v's manner (run only).
func writeTreeUse(w io.Writer, m *recorder.Memory, pa *timeline.Parallelism) error {
	var b strings.Builder
	if m != nil {
		how := m.Source
		if m.Estimate {
			how = "sampled every " + formatDuration(recorder.StatInterval) + ": an estimate"
		}
		fmt.Fprintf(&b, "\tTree's peak memory, all processes at once (kbytes): %d (%s)\n", m.PeakKiB, how)
	}
	if pa != nil {
		from := "from samples"
		if !pa.FromSamples {
			from = "each thread's CPU spread over its life: an estimate"
		}
		fmt.Fprintf(&b, "\tTasks on a CPU: %.2f on average, %.2f at the peak (%s windows, %s); threads alive at once: %d at most\n",
			pa.Average, pa.Peak, formatDuration(pa.Window), from, pa.PeakThreads)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// byCommandRows is how many command names the human output lists.
const byCommandRows = 8

// writeByCommand writes the short table of the tree's use by command
// name, the most CPU first.
func writeByCommand(w io.Writer, r runRecord, bc []timeline.CommandUse) error {
	if len(bc) < 2 {
		return nil // one name: the headline says it all
	}
	fmt.Fprintf(w, "by command (final name after exec; own threads, without children):\n")
	tw := newTable(w)
	fmt.Fprint(tw, "PROCESSES\tAT ONCE\tTHREADS\tUSER\tKERNEL\t  COMMAND\n")
	for _, c := range bc[:min(byCommandRows, len(bc))] {
		threads := strconv.Itoa(c.Threads)
		if r.job != nil {
			threads = "-" // not followed
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t  %s\n", c.Processes, c.PeakConcurrent, threads,
			formatDuration(c.User), formatDuration(c.Kernel), sanitize(c.Name))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(bc) - byCommandRows; n > 0 {
		_, err := fmt.Fprintf(w, "(%d more commands: --json lists every one)\n", n)
		return err
	}
	return nil
}
