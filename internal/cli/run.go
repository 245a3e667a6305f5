package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

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
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	// Catch (not ignore: an ignored signal stays ignored across exec, and
	// CMD must get them) SIGINT, SIGQUIT, SIGTERM and SIGHUP, so that we
	// live to report; Run passes them on to CMD.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	res, err := recorder.Run(context.Background(), cmd, recorder.RunOptions{
		Tree:         needTree,
		Samples:      tracePath != "" || timelinePath != "",
		AdoptOrphans: true, // run has no other children
		Signals:      sigs,
	})
	switch {
	case errors.Is(err, recorder.ErrNoTree):
		fmt.Fprintf(env.Stderr, "%s: --tree: %v\n", programName, errors.Unwrap(err))
		return exitFailed
	case err != nil && res == nil:
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotRun
	case err != nil:
		// CMD ran: its status stands, though its record could not be read.
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		return res.ExitStatus()
	}
	status := res.ExitStatus()
	rr := runRecordOf(res, wantTree)
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

// runRecordOf is run's record of a run of CMD.
func runRecordOf(res *recorder.Result, detail bool) runRecord {
	rr := runRecord{record: record{ProcessInfo: res.Process}, treeNote: "1us", recErr: res.RecordingErr,
		detail: detail, run: true, notFinal: !res.FinalExact, recording: res.Recording, stats: res.Stats,
		exit: exitOf(res.State), wall: res.Wall, job: res.Job}
	rr.tree = tree{valid: res.TreeValid, User: res.TreeUser, Kernel: res.TreeKernel}
	if u := res.TreeUsage; u != nil {
		rr.tree.usage = &rusage{maxRSS: u.MaxRSS, voluntary: u.Voluntary, involuntary: u.Involuntary}
	}
	if o := res.Orphans; o != nil {
		rr.orphans = &orphans{rusage: rusage{user: o.User, kernel: o.Kernel, maxRSS: o.MaxRSS,
			voluntary: o.Voluntary, involuntary: o.Involuntary}, reaped: o.Reaped, running: o.Running}
	}
	if rr.job != nil {
		// The job's: those still running with their times so far.
		rr.treeNote, rr.treeWho = rr.job.Precision, "every process of its job"
	}
	return rr
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
