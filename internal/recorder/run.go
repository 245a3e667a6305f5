package recorder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/jobtree"
	"github.com/cputime/cputime/internal/timeline"
)

// ErrNoTree is wrapped by Run when RunOptions.Tree asks for the whole tree
// and neither a recording nor a job object can hold it: CMD did not run.
var ErrNoTree = errors.New("the command's tree cannot be recorded here")

// RunOptions tune Run.
type RunOptions struct {
	// Tree insists on the whole tree: where it cannot be recorded, Run
	// returns an error wrapping ErrNoTree without running CMD. Without
	// it, CMD runs anyway and the result says why its tree is missing.
	Tree bool
	// Samples keeps each task's CPU samples, which a timeline draws.
	Samples bool
	// AdoptOrphans makes the calling process a child subreaper while CMD
	// runs (Linux): a descendant whose parent exits before it (a daemon
	// that double-forks) becomes the caller's child, and Run reaps it and
	// adds its times to the tree's. Run then reaps every child of the
	// process but CMD, so the caller must have no other children of its
	// own meanwhile: it is for a command such as cputime run, not for a
	// server that runs commands side by side.
	AdoptOrphans bool
	// Signals, if not nil, are passed on to CMD while it runs: what the
	// caller catches so that it lives to report (SIGINT, SIGTERM, ...).
	// SIGINT and SIGQUIT are not passed on when the controlling terminal
	// sent them to CMD's process group as well, where a second one would
	// be a second ^C.
	Signals <-chan os.Signal
	// WaitOrphans, if positive, makes the record end when CMD's whole
	// tree has exited, not CMD alone: Run waits up to that long after CMD
	// exits for the rest of its tree, the orphans it adopts (Linux, with
	// AdoptOrphans: each reaped into the tree's times, and in the
	// recording until it exits) or the processes of CMD's job (Windows).
	// Orphans says how long it waited and whether the time ran out.
	WaitOrphans time.Duration
	// KillOrphans kills what is left of the tree when WaitOrphans runs out
	// (or ctx is done), so that nothing of one run outlives it: what a
	// caller needs that runs commands one after another, each adopting
	// the orphans the previous one would leave. The killed are reaped
	// into the tree's times (what they used until then).
	KillOrphans bool
}

// Usage is what wait4's rusage says of processes besides their times.
type Usage struct {
	User, Kernel time.Duration
	// MaxRSS is the largest maximum resident set size of the processes,
	// in KiB: not the tree's, which can be more (wait4 keeps the largest).
	MaxRSS int64
	// Voluntary and Involuntary are the context switches.
	Voluntary, Involuntary int64
}

// Add adds v: the times and switches add up, MaxRSS is the larger.
func (u *Usage) Add(v Usage) {
	u.User += v.User
	u.Kernel += v.Kernel
	u.MaxRSS = max(u.MaxRSS, v.MaxRSS)
	u.Voluntary += v.Voluntary
	u.Involuntary += v.Involuntary
}

// Orphans is what Run reaped as the tree's subreaper.
type Orphans struct {
	Usage
	// Reaped is how many it reaped; Running how many were still running
	// when Run returned (not waited for, or left when WaitOrphans ran
	// out: their times are not in Usage).
	Reaped, Running int
	// Waited is how long Run waited for them after CMD exited
	// (WaitOrphans); TimedOut says the wait ran out before they all
	// exited, and Killed how many of those left it killed (KillOrphans:
	// reaped, and counted in Reaped).
	Waited   time.Duration
	TimedOut bool
	Killed   int
}

// Result is the record of one run of a command.
type Result struct {
	// Process is CMD's own record, its final times read from its zombie
	// where FinalExact.
	Process    cputime.ProcessInfo
	FinalExact bool
	// State is how CMD ended.
	State *os.ProcessState
	// Wall is the wall-clock time from CMD's start to its exit seen.
	Wall time.Duration
	// TreeValid says TreeUser and TreeKernel hold the tree's times: CMD's
	// own plus those of every descendant that was waited for, and of the
	// orphans reaped, from wait4's rusage (to the microsecond); or, in a
	// job object, every process of the job (Job.Precision says how exact).
	TreeValid            bool
	TreeUser, TreeKernel time.Duration
	// TreeUsage is the rest of the tree's rusage, nil where unknown.
	TreeUsage *Usage
	// Orphans is what was reaped as subreaper, nil when Run was not one.
	Orphans *Orphans
	// Recording is every process and thread of the tree, nil where it
	// could not be recorded; RecordingErr says why, or what it lacks.
	Recording    *timeline.Recording
	Stats        Stats
	RecordingErr error
	// Job is what CMD's job object saw (Windows), nil elsewhere.
	Job *jobtree.Result
	// Memory is the tree's memory at its highest, nil where unknown (CMD
	// not recorded, or gone before a sample).
	Memory *Memory
}

// ExitStatus is the status a shell reports for CMD: its exit code, or 128
// plus the signal that ended it.
func (r *Result) ExitStatus() int {
	if ws, ok := r.State.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return r.State.ExitCode()
}

// Run starts cmd, records its tree until it exits, and returns the
// record. The tree is recorded where the system allows it (Start, on
// Linux) and otherwise run in a job object (Windows). A recording that
// cannot start has not let CMD run an instruction; CMD then runs afresh
// from a copy of cmd's fields, so its standard streams should be files
// (an io.Reader given as Stdin may have been read from). When ctx is done
// before CMD exits, CMD is killed, and the record is still returned.
//
// The error is one of starting CMD (errors.Is exec.ErrNotFound,
// fs.ErrNotExist, fs.ErrPermission) or one wrapping ErrNoTree, with a nil
// Result; or one of reading CMD's record, with a Result that holds only
// how CMD ended (State) and Wall. A CMD that fails is no error of Run's:
// see Result.State.
func Run(ctx context.Context, cmd *exec.Cmd, opts RunOptions) (*Result, error) {
	var subreaper bool
	if opts.AdoptOrphans {
		var restore func()
		subreaper, restore = adoptOrphans()
		defer restore()
	}
	mem := newTreeMemory()
	defer mem.close()
	wallStart := time.Now()
	rec, recErr := Start(cmd, mem.options(Options{Samples: opts.Samples}))
	startErr := recErr
	var job *jobtree.Tree
	if recErr != nil && (cmd.Process != nil || errors.Is(recErr, ErrNotSupported)) {
		if opts.Tree && !jobtree.Supported {
			return nil, fmt.Errorf("%w: %w", ErrNoTree, recErr)
		}
		cmd = clone(cmd)
		if !jobtree.Supported {
			startErr = cmd.Start()
		} else {
			var jobErr error
			job, jobErr = jobtree.Start(cmd, opts.Tree)
			switch {
			case job != nil:
				startErr, recErr = nil, nil
			case errors.Is(jobErr, jobtree.ErrNotSupported) && (cmd.Process == nil || cmd.ProcessState != nil):
				// Tree, and the job could not hold CMD: it did not run.
				return nil, fmt.Errorf("%w: %w", ErrNoTree, jobErr)
			case cmd.Process == nil:
				startErr = jobErr
			default: // CMD runs outside any job; the result says why
				startErr, recErr = nil, jobErr
			}
		}
	}
	if startErr != nil {
		return nil, startErr
	}
	if rec != nil {
		defer rec.Close()
	}
	if job != nil {
		defer job.Close()
	}
	done := make(chan struct{})
	parented := make(chan Orphans, 1)
	go func() { parented <- parent(ctx, cmd.Process, subreaper, opts.Signals, done) }()
	// Until cmd.Wait reaps it, the child stays (at worst a zombie), so the
	// handle opens and its final times are the kernel's exact ones.
	info, exact, err := FinalRecord(cmd.Process.Pid, func(h *cputime.Process) error { return h.Wait(context.Background()) })
	wall := time.Since(wallStart)
	close(done)
	adopted := <-parented
	if err == nil && opts.WaitOrphans > 0 {
		// CMD is a zombie whose children are ours now; the recording
		// goes on until the last of them exits.
		switch {
		case subreaper:
			waitOrphans(ctx, cmd.Process.Pid, opts.WaitOrphans, opts.KillOrphans, opts.Signals, &adopted)
		case job != nil:
			adopted = waitJob(ctx, job, opts.WaitOrphans, opts.KillOrphans)
		}
	}
	res := &Result{Process: info, FinalExact: exact, RecordingErr: recErr, Wall: wall}
	if rec != nil && err == nil {
		// Before the reaping: the top process's main thread is read from
		// its zombie.
		res.Recording, res.Stats, res.RecordingErr = rec.Stop()
		if res.Recording != nil && len(res.Recording.Processes) > 0 {
			oneThreadAlike(&res.Recording.Processes[0], info.Times)
		}
	}
	var jr jobtree.Result
	if job != nil && err == nil {
		// CMD has exited: what its job saw.
		jr = job.Finish()
		res.Recording, res.Job = jobRecording(jr), &jr
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return nil, fmt.Errorf("waiting for %s: %w", cmd.Path, werr)
	}
	res.State = cmd.ProcessState
	if err != nil {
		// CMD ran and ended: its status stands, its record could not be read.
		return &Result{State: res.State, Wall: wall}, fmt.Errorf("reading the record of process %d: %w", cmd.Process.Pid, err)
	}
	res.TreeValid, res.TreeUser, res.TreeKernel, res.TreeUsage = treeTimes(res.State)
	if subreaper {
		// CMD is reaped: the orphans that exited are all ours to reap now.
		reapOrphans(0, &adopted)
		adopted.Running = childCount()
		res.Orphans = &adopted
		if res.TreeValid {
			res.TreeUser += adopted.User
			res.TreeKernel += adopted.Kernel
			if res.TreeUsage != nil {
				res.TreeUsage.Add(adopted.Usage)
			}
		}
	}
	total := res.TreeUser + res.TreeKernel
	if res.TreeValid && res.Recording != nil && res.Stats.Source == "taskstats" {
		// The estimated stretches fitted to the tree's exact total.
		FitTree(res.Recording, &res.Stats, info.ID, total)
	}
	if res.TreeValid && res.Recording != nil && res.Stats.Source == "perf" {
		// The kernel's split of the whole tree (orphans included, as they
		// are in the recording), shared among the tasks too short for tick
		// evidence of their own.
		ShareSplit(res.Recording, res.TreeUser, res.TreeKernel)
	}
	if res.TreeValid && res.Recording != nil {
		// Whether the tasks add up to more than wait4's total (a parent
		// that ignored SIGCHLD; with perf, its clock counting time the
		// tasks' own leave out): said, with how much.
		CheckTree(res.Recording, &res.Stats, total)
	}
	if res.Job != nil {
		// The job's: those still running with their times so far.
		res.TreeValid, res.TreeUser, res.TreeKernel, res.TreeUsage = true, jr.User, jr.Kernel, nil
		if opts.WaitOrphans > 0 {
			res.Orphans = &adopted
		}
	}
	mem.finish(res)
	return res, nil
}

// waitJob waits up to limit for CMD's job to hold no running process
// (Windows). The processes' times are in the job's totals, not in the
// Orphans returned, which say how long it waited and what was left.
func waitJob(ctx context.Context, job *jobtree.Tree, limit time.Duration, kill bool) Orphans {
	w := job.WaitEmpty(ctx, limit, kill)
	return Orphans{Waited: w.Waited, TimedOut: w.TimedOut, Running: w.Left, Killed: w.Killed}
}

// clone is a command like cmd that has not started.
func clone(cmd *exec.Cmd) *exec.Cmd {
	return &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles,
		SysProcAttr: cmd.SysProcAttr, WaitDelay: cmd.WaitDelay}
}

// parent is what Run does as CMD's parent until done: it passes signals on
// to CMD, kills it when ctx is done and, as subreaper, reaps the orphans
// that exit (SIGCHLD), and returns what they used.
//
// SIGTERM and SIGHUP are passed on: a SIGTERM or SIGHUP sent to the whole
// group reaches CMD twice, but a pending signal is not queued twice, and a
// handled one means the same thing again.
func parent(ctx context.Context, p *os.Process, subreaper bool, sigs <-chan os.Signal, done <-chan struct{}) Orphans {
	pid := p.Pid
	var o Orphans
	var chld <-chan os.Signal
	if subreaper {
		c, stop := notifyChild()
		defer stop()
		chld = c
		reapOrphans(pid, &o) // those that exited before we listened
	}
	cancelled := ctx.Done()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM || s == syscall.SIGHUP || !terminalSent(pid) {
				p.Signal(s) // fails only once CMD is gone: nothing to pass on then
			}
		case <-chld:
			reapOrphans(pid, &o)
		case <-cancelled:
			p.Kill()
			cancelled = nil
		case <-done:
			return o
		}
	}
}

// FinalRecord opens process pid, waits for it with wait, and returns its
// record with the exit time and final times, and whether those are exact
// (cputime.Process.FinalExact). Run waits for CMD, its child, which stays
// (at worst a zombie) until it is reaped, so its times are the kernel's
// final ones; "cputime wait" for a process that is not its child.
func FinalRecord(pid int, wait func(*cputime.Process) error) (cputime.ProcessInfo, bool, error) {
	h, err := cputime.OpenProcess(pid)
	if err != nil {
		return cputime.ProcessInfo{}, false, err
	}
	defer h.Close()
	info, err := cputime.ProcessInfoOf(pid) // for its name, while it is there
	if err != nil {
		return cputime.ProcessInfo{}, false, err
	}
	if err := wait(h); err != nil {
		return cputime.ProcessInfo{}, false, err
	}
	if info.Times, err = h.Times(); err != nil {
		return cputime.ProcessInfo{}, false, err
	}
	exact, err := h.FinalExact()
	if err != nil {
		return cputime.ProcessInfo{}, false, err
	}
	// The listing's cycles were of the times at the start: the caller
	// derives them from the final times instead.
	info.Threads, info.Cycles = 0, 0
	return info, exact, nil
}

// oneThreadAlike gives the only thread of the top process p the split of
// the process's own record (pt), on the thread's total: one task, one
// answer. The recording splits the thread by the kernel's tick samples at
// its end; the process's record comes from its handle, whose split never
// goes back on what it reported while the process ran, and on a task of a
// few ms the two can differ by a tick.
func oneThreadAlike(p *timeline.Process, pt cputime.Times) {
	if len(p.Threads) != 1 || pt.User+pt.Kernel <= 0 {
		return
	}
	t := &p.Threads[0]
	total := t.User + t.Kernel
	t.Kernel = time.Duration(float64(total) * float64(pt.Kernel) / float64(pt.User+pt.Kernel))
	t.User = total - t.Kernel
	p.User, p.Kernel = t.User, t.Kernel
}

// jobRecording is what a job object saw as a recording: its processes,
// without their threads (the job does not follow threads).
func jobRecording(r jobtree.Result) *timeline.Recording {
	if len(r.Processes) == 0 {
		return nil
	}
	rec := &timeline.Recording{Start: r.Processes[0].Creation, End: time.Now()}
	for _, p := range r.Processes {
		rec.Processes = append(rec.Processes, timeline.Process{ID: p.ID, Parent: p.Parent, Name: p.Name,
			Creation: p.Creation, Exit: p.Exit, User: p.User, Kernel: p.Kernel})
		if p.Exit.After(rec.End) {
			rec.End = p.Exit
		}
	}
	return rec
}
