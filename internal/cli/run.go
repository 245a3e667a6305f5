package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
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
	// A write to a closed stdout or stderr pipe would otherwise kill run
	// with SIGPIPE (Go's runtime raises it for fds 1 and 2 where the
	// signal is not handled), and 141 would replace CMD's status; caught,
	// it is EPIPE, an error like any other. Caught, not ignored: an
	// ignored signal stays ignored across exec, and CMD must die of it as
	// it would without run.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	asJSON, wantTree := false, false
	var outPath, tracePath, timelinePath string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			goto command
		case a == "--json" || a == "-json":
			asJSON = true
		case a == "--tree" || a == "-tree":
			wantTree = true
		case a == "-h" || a == "--help":
			fmt.Fprint(env.Stdout, runUsage)
			return exitOK
		default:
			name, v, explicit := strings.Cut(a, "=")
			dst := map[string]*string{"-o": &outPath, "--output": &outPath, "--trace": &tracePath, "--timeline": &timelinePath}[name]
			if dst == nil {
				return usageError(env, "%s", unknownOption("run", a))
			}
			if !explicit {
				if len(args) == 0 {
					return usageError(env, "run: %s needs a file name", name)
				}
				v, args = args[0], args[1:]
				if err := PathOption(name, v); err != nil {
					return usageError(env, "run: %v", err)
				}
			}
			if v == "" {
				return usageError(env, "run: %s needs a file name", name)
			}
			*dst = v
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
	defer files.discard()

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
	// The recording mostly waits for events. With one P the Go scheduler
	// wakes no spare thread to look for work at each of them, and with a
	// GC target of 400 % it collects a heap that only grows while CMD runs
	// less often: together 25 % less of the recording's own CPU (5,000
	// threads: 74 ms against 100, medians of 7), which CMD's work would
	// otherwise compete with. The process does nothing else meanwhile.
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(400)
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
	if asJSON {
		go warmJSON()
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	parented := make(chan orphans, 1)
	go func() { parented <- parent(cmd.Process, subreaper, sigs, done) }()
	// Until cmd.Wait reaps it, the child stays (at worst a zombie), so the
	// handle opens and its final times are the kernel's exact ones.
	r0, exact, err := finalRecord(pid, func(h *cputime.Process) error { return h.Wait(context.Background()) })
	wall := time.Since(wallStart)
	close(done)
	adopted := <-parented
	// run is CMD's parent and reaps it only below, so the handle reads
	// its zombie: exact, unless that read failed.
	rr := runRecord{record: r0, treeNote: "1us", recErr: recErr, detail: wantTree, run: true, notFinal: !exact}
	if rec != nil && err == nil {
		// Before the reaping: the top process's main thread is read from
		// its zombie.
		rr.recording, rr.stats, rr.recErr = rec.Stop()
		if rr.recording != nil && len(rr.recording.Processes) > 0 {
			oneThreadAlike(&rr.recording.Processes[0], rr.Times)
		}
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
	if rr.tree.valid && rr.recording != nil {
		// Whether the tasks add up to more than wait4's total (a parent
		// that ignored SIGCHLD; with perf, its clock counting time the
		// tasks' own leave out): said, with how much.
		recorder.CheckTree(rr.recording, &rr.stats, rr.tree.User+rr.tree.Kernel)
	}
	if rr.job != nil {
		rr.tree = tree{valid: true, User: jr.User, Kernel: jr.Kernel}
		// The job's: those still running with their times so far.
		rr.treeNote, rr.treeWho = jr.Precision, "every process of its job"
	}
	// From here CMD's status is run's whatever else fails, as POSIX has
	// time(1) do: an output that cannot be written is an error on stderr,
	// and the record goes there instead.
	var record bytes.Buffer
	if err := writeRunRecord(&record, rr, asJSON, env.Location, newCycler(env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing the record: %v\n", programName, err)
	}
	if files.record != nil {
		err := files.record.write(func(w io.Writer) error {
			_, err := w.Write(record.Bytes())
			return err
		})
		if err == nil {
			record.Reset()
		} else {
			fmt.Fprintf(env.Stderr, "%s: %v; the record follows\n", programName, err)
		}
	}
	if record.Len() > 0 {
		env.Stderr.Write(record.Bytes()) // nowhere left to say it if this fails
	}
	for _, d := range []struct {
		f     *outFile
		write func(io.Writer, *timeline.Recording) error
	}{{files.trace, traceWriter}, {files.timeline, timelineWriter}} {
		if d.f == nil {
			continue
		}
		if err := d.f.write(func(w io.Writer) error { return writeDrawing(w, d.write, rr.recording) }); err != nil {
			fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		}
	}
	return status
}

// runFiles are the files run writes, created before CMD starts.
type runFiles struct{ record, trace, timeline *outFile }

// createOutputs creates run's files (-o, --trace, --timeline; "" for none).
// Its error is createOutFile's (errors.Is fs.ErrNotExist, fs.ErrPermission).
func createOutputs(record, trace, timeline string) (runFiles, error) {
	var fs runFiles
	for _, x := range []struct {
		path string
		f    **outFile
	}{{record, &fs.record}, {trace, &fs.trace}, {timeline, &fs.timeline}} {
		if x.path == "" {
			continue
		}
		f, err := createOutFile(x.path)
		if err != nil {
			fs.discard()
			return runFiles{}, err
		}
		*x.f = f
	}
	return fs, nil
}

// discard drops the files not written (CMD could not run): their
// temporary files go, the paths stay as they were.
func (fs runFiles) discard() {
	for _, f := range []*outFile{fs.record, fs.trace, fs.timeline} {
		f.discard()
	}
}

// PathOption checks value, given to the path option opt as the next
// argument (not as opt=value): one that begins with "-" is refused, since
// "-o --json" is a forgotten file name far more often than a file named
// --json, and taking it would create that file and swallow the option.
// Every command's path options use it (serve's --web.config.file too).
func PathOption(opt, value string) error {
	if strings.HasPrefix(value, "-") {
		return fmt.Errorf("%s needs a file name, not the option %q (a file name that begins with - is given as %s=%s)", opt, value, opt, value)
	}
	return nil
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
