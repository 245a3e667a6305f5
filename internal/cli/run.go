package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/jobtree"
	"github.com/cputime/cputime/internal/recorder"
	"github.com/cputime/cputime/internal/timeline"
)

// Exit statuses of run when CMD could not be started, as time(1) and the
// shells use them.
const (
	exitCannotRun = 126
	exitNotFound  = 127
)

// runCommand implements "cputime run [--json] [-o FILE] [--] CMD [ARG...]".
// Like time(1), the record goes to stderr so that CMD's stdout stays its
// own, and cputime lives through the signals that end CMD to report (see
// parent).
func runCommand(env Env, args []string) int {
	asJSON, outPath, wantTree, tracePath, timelinePath := false, "", false, "", ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			goto command
		case a == "--json" || a == "-json":
			asJSON = true
		case a == "-o" || a == "--output":
			if len(args) == 0 {
				return usageError(env, "run: %s needs a file name", a)
			}
			outPath, args = args[0], args[1:]
		case strings.HasPrefix(a, "--output="):
			outPath = strings.TrimPrefix(a, "--output=")
		case a == "--tree" || a == "-tree":
			wantTree = true
		case a == "--trace" || a == "--timeline":
			if len(args) == 0 {
				return usageError(env, "run: %s needs a file name", a)
			}
			if a == "--trace" {
				tracePath = args[0]
			} else {
				timelinePath = args[0]
			}
			args = args[1:]
		case strings.HasPrefix(a, "--trace="):
			tracePath = strings.TrimPrefix(a, "--trace=")
		case strings.HasPrefix(a, "--timeline="):
			timelinePath = strings.TrimPrefix(a, "--timeline=")
		case a == "-h" || a == "--help":
			fmt.Fprint(env.Stdout, runUsage)
			return exitOK
		default:
			return usageError(env, "%s", unknownOption("run", a))
		}
	}
command:
	if len(args) == 0 {
		return usageError(env, "run: no command given")
	}
	// Every file run writes is created now, before CMD starts: a wrong
	// path costs the error, not the work's record.
	files, err := createOutputs(outPath, tracePath, timelinePath)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		return exitFailed
	}
	defer files.close()
	out := env.Stderr
	if files.record != nil {
		out = files.record
	}

	// --trace and --timeline draw the recording: they need it as --tree does.
	needTree := wantTree || tracePath != "" || timelinePath != ""
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
		return cmd
	}
	cmd := newCmd()
	// Catch (not ignore: an ignored signal stays ignored across exec, and
	// CMD must get them) SIGINT, SIGQUIT, SIGTERM and SIGHUP, so that we
	// live to report; parent passes them on to CMD.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// Orphans of the tree (a daemon that double-forks) become our children,
	// reaped into the tree's totals.
	subreaper, restore := adoptOrphans()
	defer restore()
	wallStart := time.Now()
	// The tree is recorded whenever the system allows it (children in the
	// record); --tree insists. A recording that cannot start has not let
	// CMD run a single instruction: CMD is then started again, plainly.
	// On Windows, where there is no recorder, CMD runs in a job object of
	// its own (jobtree), which gives the tree's totals and its processes.
	// The timeline's samples only where one is drawn.
	rec, recErr := recorder.Start(cmd, recorder.Options{Samples: tracePath != "" || timelinePath != ""})
	startErr := recErr
	var job *jobtree.Tree
	if recErr != nil && (cmd.Process != nil || errors.Is(recErr, recorder.ErrNotSupported)) {
		if needTree && !jobtree.Supported {
			fmt.Fprintf(env.Stderr, "%s: --tree: %v\n", programName, recErr)
			return exitFailed
		}
		cmd = newCmd()
		if !jobtree.Supported {
			startErr = cmd.Start()
		} else {
			var jobErr error
			job, jobErr = jobtree.Start(cmd, needTree)
			switch {
			case job != nil:
				startErr, recErr = nil, nil
			case errors.Is(jobErr, jobtree.ErrNotSupported) && (cmd.Process == nil || cmd.ProcessState != nil):
				// --tree, and the job could not hold CMD: it did not run.
				fmt.Fprintf(env.Stderr, "%s: --tree: %v\n", programName, jobErr)
				return exitFailed
			case cmd.Process == nil:
				startErr = jobErr
			default: // CMD runs outside any job; the record says why
				startErr, recErr = nil, jobErr
			}
		}
	}
	if startErr != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, startErr)
		if errors.Is(startErr, exec.ErrNotFound) || errors.Is(startErr, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotRun
	}
	if rec != nil {
		defer rec.Close()
	}
	if job != nil {
		defer job.Close()
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	parented := make(chan orphans, 1)
	go func() { parented <- parent(cmd.Process, subreaper, sigs, done) }()
	// Until cmd.Wait reaps it, the child stays (at worst a zombie), so the
	// handle opens and its final times are the kernel's exact ones.
	r0, err := finalRecord(pid, func(h *cputime.Process) error { return h.Wait(context.Background()) })
	wall := time.Since(wallStart)
	close(done)
	adopted := <-parented
	rr := runRecord{record: r0, treeNote: "1us", recErr: recErr, detail: wantTree, run: true}
	if rec != nil && err == nil {
		// Before the reaping: the top process's main thread is read from
		// its zombie.
		rr.recording, rr.stats, rr.recErr = rec.Stop()
	}
	var jr jobtree.Result
	if job != nil && err == nil {
		// CMD has exited: what its job saw.
		jr = job.Finish()
		rr.recording, rr.job = jobRecording(jr), &jr
	}
	werr := cmd.Wait()
	status := exitOK
	var exitErr *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exitErr):
		status = exitStatus(exitErr.ProcessState)
	default:
		fmt.Fprintf(env.Stderr, "%s: waiting for %s: %v\n", programName, args[0], werr)
		status = exitFailed
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		return exitFailed
	}
	if ps := cmd.ProcessState; ps != nil {
		rr.tree = treeTimes(ps)
		rr.exit = exitOf(ps)
		rr.wall = wall
	}
	if subreaper {
		// CMD is reaped: the orphans that exited are all ours to reap now.
		reapOrphans(0, &adopted)
		adopted.running = childCount()
		rr.orphans = &adopted
		if rr.tree.valid {
			rr.tree.User += adopted.user
			rr.tree.Kernel += adopted.kernel
			if rr.tree.usage != nil {
				rr.tree.usage.add(adopted.rusage)
			}
		}
	}
	if rr.tree.valid && rr.recording != nil && rr.stats.Source == "taskstats" {
		// The estimated stretches fitted to the tree's exact total.
		recorder.FitTree(rr.recording, &rr.stats, rr.ID, rr.tree.User+rr.tree.Kernel)
	}
	if rr.tree.valid && rr.recording != nil && rr.stats.Source == "perf" {
		// The kernel's split of the whole tree (orphans included, as they
		// are in the recording), shared among the tasks too short for tick
		// evidence of their own.
		recorder.ShareSplit(rr.recording, rr.tree.User, rr.tree.Kernel)
	}
	if rr.job != nil {
		rr.tree = tree{valid: true, User: jr.User, Kernel: jr.Kernel}
		// The job's: those still running with their times so far.
		rr.treeNote, rr.treeWho = jr.Precision, "every process of its job"
	}
	if err := writeRunRecord(out, rr, asJSON, env.Location, newCycler(env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
		return exitFailed
	}
	for _, d := range []struct {
		f     *os.File
		write func(io.Writer, *timeline.Recording) error
	}{{files.trace, traceWriter}, {files.timeline, timelineWriter}} {
		if d.f == nil {
			continue
		}
		if err := writeDrawing(d.f, d.write, rr.recording); err != nil {
			fmt.Fprintf(env.Stderr, "%s: %s: %v\n", programName, d.f.Name(), err)
			status = max(status, exitFailed)
		}
	}
	return status
}

// runFiles are the files run writes, created before CMD starts.
type runFiles struct{ record, trace, timeline *os.File }

// createOutputs creates run's files (-o, --trace, --timeline; "" for none).
// Its error is os.Create's (errors.Is fs.ErrNotExist, fs.ErrPermission).
func createOutputs(record, trace, timeline string) (runFiles, error) {
	var fs runFiles
	for _, x := range []struct {
		path string
		f    **os.File
	}{{record, &fs.record}, {trace, &fs.trace}, {timeline, &fs.timeline}} {
		if x.path == "" {
			continue
		}
		f, err := os.Create(x.path)
		if err != nil {
			fs.close()
			return runFiles{}, err
		}
		*x.f = f
	}
	return fs, nil
}

func (fs runFiles) close() {
	for _, f := range []*os.File{fs.record, fs.trace, fs.timeline} {
		if f != nil {
			f.Close()
		}
	}
}

// parent is what run does as CMD's parent until done: it passes signals on
// to CMD and, as subreaper, reaps the orphans that exit (SIGCHLD), and
// returns what they used.
//
// SIGTERM and SIGHUP are passed on: a SIGTERM or SIGHUP sent to the whole
// group reaches CMD twice, but a pending signal is not queued twice, and a
// handled one means the same thing again. SIGINT and SIGQUIT are passed on
// unless the terminal sent them to CMD too (terminalSent), where a second
// one would be a second ^C.
func parent(p *os.Process, subreaper bool, sigs <-chan os.Signal, done <-chan struct{}) orphans {
	pid := p.Pid
	var o orphans
	var chld chan os.Signal
	if subreaper {
		chld = make(chan os.Signal, 1)
		signal.Notify(chld, sigChild)
		defer signal.Stop(chld)
		reapOrphans(pid, &o) // those that exited before we listened
	}
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGHUP || !terminalSent(pid) {
				p.Signal(s) // fails only once CMD is gone: nothing to pass on then
			}
		case <-chld:
			reapOrphans(pid, &o)
		case <-done:
			return o
		}
	}
}

// orphans is what run reaped as subreaper: descendants whose parent exited
// before them.
type orphans struct {
	rusage
	reaped  int
	running int // still running when run reported (not waited for)
}

// rusage is what time -v reports of a tree besides its times: the largest
// maximum resident set size of its processes (KiB) and their voluntary and
// involuntary context switches (wait4's rusage).
type rusage struct {
	user, kernel           time.Duration
	maxRSS                 int64
	voluntary, involuntary int64
}

func (u *rusage) add(v rusage) {
	u.user += v.user
	u.kernel += v.kernel
	u.maxRSS = max(u.maxRSS, v.maxRSS)
	u.voluntary += v.voluntary
	u.involuntary += v.involuntary
}

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
	usage *rusage
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
	orphans *orphans
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
}

type jsonRun struct {
	jsonProcess
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
	Children []jsonChild `json:"children"`
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
	PPID     int         `json:"ppid"`
	Children []jsonChild `json:"children"`
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
	// BufferBytes is each of the recording's ring buffers (two per CPU).
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
	if r.recording != nil {
		r.threads = recordedThreads(r.recording.Processes[0])
		r.incomplete = incompleteThreads(r.recording.Processes[0])
		r.noTicks = noTickThreads(r.recording.Processes[0])
		r.estimated = estimatedThreads(r.recording.Processes[0])
		// One answer per task: the main thread is the process's leader,
		// dated as the process is.
		for i := range r.threads {
			if r.threads[i].ID == r.ID {
				r.threads[i].Times.Creation, r.threads[i].Times.Exit = r.Times.Creation, r.Times.Exit
			}
		}
	}
	if asJSON {
		j := jsonRun{jsonProcess: toJSON(r.record, cyc)}
		if r.tree.valid {
			u, k := r.tree.User.Nanoseconds(), r.tree.Kernel.Nanoseconds()
			j.TotalUserNs, j.TotalKernelNs, j.TotalPrecision = &u, &k, ptr(r.treeNote)
		}
		timeV(&j, r)
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
		return encodeJSON(w, j)
	}
	if err := writeRecord(w, r.record, false, loc, cyc); err != nil {
		return err
	}
	if r.tree.valid {
		who := "its reaped descendants (what time(1) reports, to " + r.treeNote + ")"
		if r.orphans != nil {
			orphans := "orphans"
			if r.orphans.reaped == 1 {
				orphans = "orphan"
			}
			who = fmt.Sprintf("its reaped descendants, with %d %s cputime reaped as the tree's subreaper (to %s)", r.orphans.reaped, orphans, r.treeNote)
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
	if !r.tree.valid {
		return nil
	}
	return writeRecording(w, r, loc, cyc)
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
		j.MaxRSSKiB, j.VoluntaryContextSwitches, j.InvoluntaryContextSwitches = &u.maxRSS, &u.voluntary, &u.involuntary
	}
	if r.exit != nil && r.tree.usage != nil { // Linux: whether run was a subreaper is known
		sub := r.orphans != nil
		j.Subreaper = &sub
		if sub {
			j.OrphansReaped, j.OrphansRunning = &r.orphans.reaped, &r.orphans.running
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
			u.maxRSS, u.voluntary, u.involuntary)
	}
	if o := r.orphans; o != nil && o.running > 0 {
		fmt.Fprintf(&b, "\tOrphans still running, not waited for: %d\n", o.running)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// exitStatus is the status a shell reports for ps: the exit code, or 128
// plus the signal that killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// waitCommand implements "cputime wait [--json] PID".
func waitCommand(env Env, args []string) int {
	asJSON := false
	var pids []int
	for _, a := range args {
		switch {
		case a == "--json" || a == "-json":
			asJSON = true
		case a == "-h" || a == "--help":
			fmt.Fprint(env.Stdout, waitUsage)
			return exitOK
		case isOption(a):
			return usageError(env, "%s", unknownOption("wait", a))
		default:
			pid, err := parsePID(a)
			if err != nil {
				return usageError(env, "wait: %v", err)
			}
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		return usageError(env, "wait: want one PID")
	}
	// The tree, as far as a non-parent can see it: the process's reaped
	// descendants' times, which the kernel keeps in its stat (cutime,
	// cstime) until its own parent reaps it. The file is opened before the
	// wait, so it stays bound to this process.
	var atExit func() tree
	r0, err := finalRecord(pids[0], func(h *cputime.Process) error {
		atExit = openTree(pids[0])
		return waitRefreshing(h)
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", programName, describeErr(pids[0], explainID(pids[0], err)))
		return exitFailed
	}
	rec := runRecord{record: r0, treeNote: "10ms"}
	if atExit != nil {
		rec.tree = atExit()
	}
	if err := writeRunRecord(env.Stdout, rec, asJSON, env.Location, newCycler(env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}

// waitRefreshing waits for the process of h, reading its times every
// refreshInterval meanwhile. The library's Wait reads nothing while it
// waits, and a process that is not ours may be reaped by its parent before
// its final times can be read: then the last times read stand, so they must
// be recent. One handle, one read every 10 ms: a few µs each.
func waitRefreshing(h *cputime.Process) error {
	const refreshInterval = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Wait(ctx) }()
	tick := time.NewTicker(refreshInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			h.Times() // an error here is Wait's to report
		}
	}
}

// finalRecord opens process pid, waits for it with wait, and returns its
// record with the exit time and final times.
func finalRecord(pid int, wait func(*cputime.Process) error) (record, error) {
	h, err := cputime.OpenProcess(pid)
	if err != nil {
		return record{}, err
	}
	defer h.Close()
	info, err := cputime.ProcessInfoOf(pid) // for its name, while it is there
	if err != nil {
		return record{}, err
	}
	if err := wait(h); err != nil {
		return record{}, err
	}
	if info.Times, err = h.Times(); err != nil {
		return record{}, err
	}
	// The listing's cycles were of the times at the start: derive them
	// from the final times instead.
	info.Threads, info.Cycles = 0, 0
	return record{ProcessInfo: info}, nil
}

func writeRecord(w io.Writer, r record, asJSON bool, loc *time.Location, cyc cycler) error {
	if asJSON {
		return encodeJSON(w, toJSON(r, cyc))
	}
	t := r.Times
	_, err := fmt.Fprintf(w, "process %d (%s): created %s, exited %s, elapsed %s, user %s, kernel %s, cycles %s\n",
		r.ID, sanitize(r.Name), formatInstant(t.Creation, loc), formatInstant(t.Exit, loc),
		formatDuration(t.Exit.Sub(t.Creation)), formatDuration(t.User), formatDuration(t.Kernel), cyc.text(t.Total()))
	return err
}

// usageError prints the sentence for a misused run or wait, then the
// command's usage.
func usageError(env Env, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	u := runUsage
	if strings.HasPrefix(msg, "wait: ") {
		u = waitUsage
	}
	fmt.Fprintf(env.Stderr, "%s: %s\n%s", programName, msg, u)
	return exitUsage
}
