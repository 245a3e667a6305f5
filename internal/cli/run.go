package cli

import (
	"bytes"
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

	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/recorder"
	"github.com/cputime/cputime/internal/timeline"
)

// noLimit is --wait-orphans without --orphan-timeout: as long as it takes.
const noLimit = time.Duration(math.MaxInt64)

// positiveDuration parses a duration such as 30s, which must be positive.
func positiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("wants a positive duration such as 30s or 5m")
	}
	return d, nil
}

// waitFor is RunOptions.WaitOrphans for run's options: 0 for no wait.
func waitFor(wait bool, limit time.Duration) time.Duration {
	if !wait {
		return 0
	}
	return limit
}

// Exit statuses of run when CMD could not be started, as time(1) and the
// shells use them.
const (
	exitCannotRun = 126
	exitNotFound  = 127
)

// runCommand implements "cputime run [--json] [-o FILE] [--] CMD [ARG...]".
// Like time(1), the record goes to stderr so that CMD's stdout stays its
// own, and cputime lives through the signals that end CMD to report (see
// recorder.Run).
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
	var o runOptions
	args, code, done := parseOptions(env, "run", runUsage, o.flags(), args)
	if done {
		return code
	}
	asJSON, wantTree, outPath, tracePath, timelinePath := o.json, o.tree, o.out, o.trace, o.timeline
	wait, limit := o.wait, o.orphanTimeout
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
		WaitOrphans:  waitFor(wait, limit),
	})
	switch {
	case errors.Is(err, recorder.ErrNoTree):
		fmt.Fprintf(env.Stderr, "%s: --tree: %v\n", programName, err)
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
	if o := res.Orphans; o != nil && o.TimedOut {
		fmt.Fprintf(env.Stderr, "%s: run: --orphan-timeout: %v after the command exited, %d orphans still running: their times are not in the record\n",
			programName, limit, o.Running)
	}
	rr := runRecordOf(res, wantTree)
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

// runOptions are run's options.
type runOptions struct {
	json, tree           bool
	out, trace, timeline string
	// wait: --wait-orphans, up to orphanTimeout (--orphan-timeout, which
	// implies it; noLimit without).
	wait          bool
	orphanTimeout time.Duration
}

func (o *runOptions) flags() *cliflag.Set {
	s := &cliflag.Set{}
	s.Bool(&o.json, "--json", "-json")
	s.Path(&o.out, "-o", "--output")
	s.Bool(&o.tree, "--tree", "-tree")
	o.orphanTimeout = noLimit
	s.Bool(&o.wait, "--wait-orphans", "-wait-orphans")
	s.Func("a duration", "", func(v string) error {
		d, err := positiveDuration(v)
		o.wait, o.orphanTimeout = true, d
		return err
	}, "--orphan-timeout")
	s.Path(&o.trace, "--trace")
	s.Path(&o.timeline, "--timeline")
	return s
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

// runRecordOf is run's record of a run of CMD.
func runRecordOf(res *recorder.Result, detail bool) runRecord {
	rr := runRecord{record: record{ProcessInfo: res.Process}, treeNote: "1us", recErr: res.RecordingErr,
		detail: detail, run: true, notFinal: !res.FinalExact, recording: res.Recording, stats: res.Stats,
		exit: exitOf(res.State), wall: res.Wall, job: res.Job, memory: res.Memory}
	rr.tree = tree{valid: res.TreeValid, User: res.TreeUser, Kernel: res.TreeKernel}
	rr.tree.usage = res.TreeUsage
	if o := res.Orphans; o != nil {
		// With --wait-orphans the record ends with the tree: so does its
		// wall time.
		rr.wall += o.Waited
		rr.orphans = o
	}
	if rr.job != nil {
		// The job's: those still running with their times so far.
		rr.treeNote, rr.treeWho = rr.job.Precision, "every process of its job"
	}
	return rr
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
