package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cputime/cputime/internal/jobtree"
	"github.com/cputime/cputime/internal/recorder"
	"github.com/cputime/cputime/internal/timeline"
)

// exitInfo is how CMD ended, as wait reported it.
type exitInfo struct {
	code       int // when it exited
	signal     syscall.Signal
	coreDumped bool
}

func exitOf(ps *os.ProcessState) *exitInfo {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitInfo{signal: ws.Signal(), coreDumped: ws.CoreDump()}
	}
	return &exitInfo{code: ps.ExitCode()}
}

// tree is what time(1) reports for the process it started: that process's
// own times plus those of every descendant that was waited for (reaped) in
// the tree, from the rusage wait4 returned. The kernel keeps these to the
// nanosecond, split by the same cputime_adjust as the process's own; the
// rusage carries them in microseconds.
type tree struct {
	valid        bool
	User, Kernel time.Duration
	// usage is the rest of the rusage (its times unused), nil where unknown.
	usage *recorder.Usage
}

// runRecord is run's and wait's record: the process's own, and the tree's.
type runRecord struct {
	record
	tree tree
	// exit is how CMD ended and wall its wall-clock time from its start to
	// its exit seen (run; nil for wait, which is not the parent).
	exit *exitInfo
	wall time.Duration
	// orphans is what run reaped as the tree's subreaper (nil: not one).
	orphans *recorder.Orphans
	// treeNote says how exact the tree's figures are, treeWho what they
	// cover besides the process ("" for wait4's reaped descendants).
	treeNote, treeWho string
	// job is what CMD's job object saw (Windows), nil elsewhere.
	job *jobtree.Result
	// recording is every process and thread of the tree (run only), nil
	// where it could not be recorded (recErr says why).
	recording *timeline.Recording
	stats     recorder.Stats
	recErr    error
	detail    bool // --tree: the human output lists every process and thread
	run       bool // run's record, which always says how complete it is
	// notFinal says the process's times are not its exact final ones:
	// its parent reaped it before they could be read (wait), so they are
	// the last read (cputime.Process.FinalExact).
	notFinal bool
	// memory is the tree's memory at its highest (run), nil where unknown.
	memory *recorder.Memory
}

type jsonRun struct {
	jsonProcess
	// FinalExact says user_ns and kernel_ns are the process's exact final
	// times; false where its parent reaped it before they could be read
	// (wait on a process not cputime's child), when they are the last
	// read (every 10 ms while wait waits).
	FinalExact    bool   `json:"final_exact"`
	TotalUserNs   *int64 `json:"total_user_ns"`
	TotalKernelNs *int64 `json:"total_kernel_ns"`
	// TotalPrecision says how exact the totals are: "1us" from wait4's
	// rusage (run), "10ms" from /proc/PID/stat's cutime and cstime (wait);
	// on Windows the job's clock tick, or under Wine "lower bound: ...".
	// Null with the totals (a tree whose totals could not be read).
	TotalPrecision *string `json:"total_precision"`
	// Children are the top process's child processes, each with its
	// threads and its own children (run, where the tree was recorded);
	// null where it was not (wait; run without the recording).
	Children jsonChildren `json:"children"`
	// Recording says how complete the children and threads are; null
	// for wait, which records nothing.
	Recording *jsonRecording `json:"recording"`

	// What time -v reports, from run only (wait is not the parent: null,
	// unknown). Present even when false or zero.
	Exit *jsonExitStatus `json:"exit"`
	// WallNs is the wall-clock time from just before CMD's start to its
	// exit seen, as time(1) measures it; CPUPercent is the tree's total
	// CPU time over it.
	WallNs     *int64   `json:"wall_ns"`
	CPUPercent *float64 `json:"cpu_percent"`
	// The tree's (CMD, its reaped descendants and the orphans run reaped):
	// the largest maximum resident set size of one process, in KiB, and the
	// context switches. Null where the system does not say (Windows) and
	// for wait.
	MaxRSSKiB                  *int64 `json:"max_rss_kib"`
	VoluntaryContextSwitches   *int64 `json:"voluntary_context_switches"`
	InvoluntaryContextSwitches *int64 `json:"involuntary_context_switches"`
	// Subreaper says whether run was the tree's child subreaper (Linux):
	// then OrphansReaped descendants whose parent had exited were reaped by
	// run, their times in the totals, and OrphansRunning were still running
	// when CMD exited (not waited for, not in the totals). Null for wait
	// and on Windows.
	Subreaper      *bool `json:"subreaper"`
	OrphansReaped  *int  `json:"orphans_reaped"`
	OrphansRunning *int  `json:"orphans_running"`

	// Where the tree's CPU and memory went (run). ByCommand is the
	// recorded processes grouped by final command name, the most CPU
	// first; null without a recording.
	ByCommand []jsonCommand `json:"by_command"`
	// TreePeakMemoryKiB is the tree's memory at its highest, in KiB (all
	// its processes at once, where max_rss_kib is the largest one's), and
	// TreePeakMemorySource what it counts: "cgroup v2 memory.peak" or
	// "cgroup v1 memory.max_usage_in_bytes" (a cgroup run made for the
	// tree, which CMD joined before its first instruction: the tree's
	// anonymous memory, the page cache it brought in and the kernel
	// memory charged to it), or "sampled" (the resident sets of its live
	// processes added up every 50 ms, at the highest sum: an estimate,
	// which recording.problems names). Null where unknown.
	TreePeakMemoryKiB    *int64  `json:"tree_peak_memory_kib"`
	TreePeakMemorySource *string `json:"tree_peak_memory_source"`
	// Parallelism is how many of the tree's tasks ran at once; null
	// without a recording.
	Parallelism *jsonParallelism `json:"parallelism"`
}

// jsonExitStatus is how CMD ended: an exit code, or a signal (with or without a
// core dump).
type jsonExitStatus struct {
	Code       *int    `json:"code"`        // null when a signal ended it
	Signal     *int    `json:"signal"`      // null when it exited
	SignalName *string `json:"signal_name"` // "SIGSEGV"
	CoreDumped bool    `json:"core_dumped"`
}

// jsonChild is one process of the recorded tree: its own times (its
// threads', not its children's) and its children.
type jsonChild struct {
	jsonProcess
	PPID     int          `json:"ppid"`
	Children jsonChildren `json:"children"`
}

type jsonRecording struct {
	// Complete is true only when every task of the tree was recorded with
	// exact final times; Problems then is empty. Otherwise Problems says,
	// in sentences with counts, what is missing or inexact and why.
	Complete bool     `json:"complete"`
	Problems []string `json:"problems"`
	// Source is where the exited tasks' final times come from: taskstats
	// (the kernel's exit records, root) or perf (task-clock counters); ""
	// without a recording (Error says why) and on Windows.
	Source string `json:"source"`
	// Events is where the records of creation, names and exit come from:
	// "system" (one event per CPU watching every task, root) or
	// "inherited" (events every task of the tree inherits); "" without a
	// recording.
	Events string `json:"events"`
	// SourceNote says why the source is perf and not taskstats ("" when
	// it is taskstats, or there is no recording).
	SourceNote string `json:"source_note"`
	// StealNs is the time the hypervisor took from the machine's CPUs
	// during the recording (/proc/stat, in 10 ms steps).
	StealNs int64 `json:"steal_ns"`
	// ExcessNs is how much the tasks' times add up to more than wait4's
	// total for the tree (0 when not, or under 1 ms): recorder.CheckTree.
	ExcessNs int64 `json:"excess_ns"`
	// ShortfallNs is how much the tasks' times add up to less than
	// wait4's total for the tree, with source perf (0 when not, or under
	// 1 ms): recorder.CheckTree.
	ShortfallNs int64 `json:"shortfall_ns"`
	// LostRecords is the number of kernel records lost to a full buffer:
	// nonzero means some tasks or times are missing.
	LostRecords uint64 `json:"lost_records"`
	// IncompleteThreads exited without their whole final count arriving.
	IncompleteThreads int `json:"incomplete_threads"`
	// RunningThreads were still running when CMD exited (times so far).
	RunningThreads int `json:"running_threads"`
	// CorruptStretches counts what a ring buffer held that was not a
	// record (the rest up to the kernel's head skipped): never seen with
	// one writer per buffer; counted so that it would be caught.
	CorruptStretches uint64 `json:"corrupt_stretches"`
	// ContextSwap: the kernel (before 6.12) swapped clone tasks' counter
	// contexts, so another perf user on these tasks could trade counts.
	ContextSwap bool `json:"context_swap"`
	// BufferBytes is each of the recording's ring buffers (one per CPU with
	// taskstats, two without).
	BufferBytes int    `json:"buffer_bytes"`
	Processes   int    `json:"processes"`
	Threads     int    `json:"threads"`
	Error       string `json:"error"` // why there are no children; "" when there are
	// Windows (the job object): the processes that joined the job but were
	// gone before they could be opened (in the totals, not in children),
	// those still running when CMD exited (times so far), the job's own
	// count of its processes, and what the record lacks. Null (Note "")
	// elsewhere.
	MissedProcesses  *int   `json:"missed_processes"`
	MissedPIDs       []int  `json:"missed_pids"`
	RunningProcesses *int   `json:"running_processes"`
	JobProcesses     *int   `json:"job_processes"`
	Note             string `json:"note"`
}

func writeRunRecord(w io.Writer, r runRecord, asJSON bool, loc *time.Location, cyc cycler) error {
	// The top process's threads are printed by the JSON record and the
	// tables of --tree alone: the plain record, its headline and the
	// processes with most CPU, does without them (building them is most
	// of a large plain run's record writing; docs/figures.md).
	if r.recording != nil && (asJSON || r.detail) {
		r.threads = recordedThreads(r.recording.Processes[0])
		r.marks = threadMarks(r.recording.Processes[0])
		// One answer per task: the main thread is the process's leader,
		// dated as the process is.
		for i := range r.threads {
			if r.threads[i].ID == r.ID {
				r.threads[i].Times.Creation, r.threads[i].Times.Exit = r.Times.Creation, r.Times.Exit
			}
		}
	}
	if asJSON {
		j := jsonRun{jsonProcess: toJSON(r.record, cyc), FinalExact: !r.notFinal}
		if r.tree.valid {
			u, k := r.tree.User.Nanoseconds(), r.tree.Kernel.Nanoseconds()
			j.TotalUserNs, j.TotalKernelNs, j.TotalPrecision = &u, &k, ptr(r.treeNote)
		}
		timeV(&j, r)
		treeUseJSON(&j, r)
		if r.recording != nil {
			j.Children = childrenJSON(r.recording, r.ID, cyc)
			j.Recording = recordingJSON(r)
		} else if r.recErr != nil {
			j.Recording = &jsonRecording{Error: r.recErr.Error()}
		} else if r.job != nil {
			missed, joined := len(r.job.Missed), r.job.Joined
			j.Recording = &jsonRecording{Error: "no process of the job could be opened", MissedProcesses: &missed,
				MissedPIDs: r.job.Missed, JobProcesses: &joined, Note: r.job.Note}
		} else if r.run {
			j.Recording = &jsonRecording{}
		}
		if j.Recording != nil {
			j.Recording.Problems = recordingProblems(r)
			j.Recording.Complete = len(j.Recording.Problems) == 0
		}
		return encodeJSON(w, &j)
	}
	if err := writeRecord(w, r.record, false, loc, cyc); err != nil {
		return err
	}
	if r.notFinal {
		if _, err := fmt.Fprintf(w, "\twarning: its parent reaped it before cputime could read its final times: these are the last read (cputime reads them every %v while it waits), short by what it ran since\n", waitRefreshInterval); err != nil {
			return err
		}
	}
	if r.tree.valid {
		who := "its reaped descendants (what time(1) reports, to " + r.treeNote + ")"
		if r.orphans != nil {
			orphans := "orphans"
			if r.orphans.Reaped == 1 {
				orphans = "orphan"
			}
			who = fmt.Sprintf("its reaped descendants, with %d %s cputime reaped as the tree's subreaper (to %s)", r.orphans.Reaped, orphans, r.treeNote)
		}
		if r.treeWho != "" {
			who = r.treeWho + " (" + r.treeNote + ")"
		}
		_, err := fmt.Fprintf(w, "process %d and %s: user %s, kernel %s, total %s\n",
			r.ID, who, formatDuration(r.tree.User), formatDuration(r.tree.Kernel), formatDuration(r.tree.User+r.tree.Kernel))
		if err != nil {
			return err
		}
	}
	if err := writeTimeV(w, r); err != nil {
		return err
	}
	bc, pa := treeUse(r)
	if err := writeTreeUse(w, r.memory, pa); err != nil {
		return err
	}
	if !r.tree.valid {
		return nil
	}
	return writeRecording(w, r, bc, loc, cyc)
}

// timeV fills in what time -v reports (run only).
func timeV(j *jsonRun, r runRecord) {
	if r.exit != nil {
		j.Exit = &jsonExitStatus{CoreDumped: r.exit.coreDumped}
		if r.exit.signal != 0 {
			n, name := int(r.exit.signal), signalName(r.exit.signal)
			j.Exit.Signal, j.Exit.SignalName = &n, &name
		} else {
			j.Exit.Code = &r.exit.code
		}
		wall := r.wall.Nanoseconds()
		j.WallNs = &wall
		if r.tree.valid && wall > 0 {
			pct := math.Round(float64(r.tree.User+r.tree.Kernel)/float64(wall)*1000) / 10
			j.CPUPercent = &pct
		}
	}
	if u := r.tree.usage; u != nil {
		j.MaxRSSKiB, j.VoluntaryContextSwitches, j.InvoluntaryContextSwitches = &u.MaxRSS, &u.Voluntary, &u.Involuntary
	}
	if r.exit != nil && r.tree.usage != nil { // Linux: whether run was a subreaper is known
		sub := r.orphans != nil
		j.Subreaper = &sub
		if sub {
			j.OrphansReaped, j.OrphansRunning = &r.orphans.Reaped, &r.orphans.Running
		}
	}
}

// writeTimeV writes what time -v reports beside the times, in its words
// (run only).
func writeTimeV(w io.Writer, r runRecord) error {
	if r.exit == nil {
		return nil
	}
	var b strings.Builder
	switch e := r.exit; {
	case e.signal != 0 && e.coreDumped:
		fmt.Fprintf(&b, "\tCommand terminated by signal %d (%s), core dumped\n", int(e.signal), signalName(e.signal))
	case e.signal != 0:
		fmt.Fprintf(&b, "\tCommand terminated by signal %d (%s)\n", int(e.signal), signalName(e.signal))
	default:
		fmt.Fprintf(&b, "\tExit status: %d\n", e.code)
	}
	fmt.Fprintf(&b, "\tElapsed (wall clock) time: %s\n", formatDuration(r.wall))
	if r.tree.valid && r.wall > 0 {
		fmt.Fprintf(&b, "\tPercent of CPU this job got: %.0f%%\n", float64(r.tree.User+r.tree.Kernel)/float64(r.wall)*100)
	}
	if u := r.tree.usage; u != nil {
		fmt.Fprintf(&b, "\tMaximum resident set size (kbytes): %d\n\tVoluntary context switches: %d\n\tInvoluntary context switches: %d\n",
			u.MaxRSS, u.Voluntary, u.Involuntary)
	}
	if o := r.orphans; o != nil && o.Running > 0 {
		fmt.Fprintf(&b, "\tOrphans still running, not waited for: %d\n", o.Running)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
