package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/recorder"
)

const benchUsage = `usage: cputime bench [OPTIONS] COMMAND...

bench runs each COMMAND several times and compares them, as hyperfine
does, by the exact CPU time of each run's whole tree: the user and kernel
time of every process the command started, orphans included (a daemon,
a process left running in the background), with the wall time beside it.
A run ends when every process of its tree has exited: bench adopts the
orphans as the tree's subreaper (Linux; on Windows, the command's job
holds them) and waits for them up to --orphan-timeout, then kills those
left, whose CPU until then is counted and whose run is marked incomplete.

The comparison's headline is CPU time: on a busy machine a run's wall
time spreads with the other work, its CPU time far less (docs/commands.md
has figures), and wait4's times, which hyperfine reports, miss every
process the command does not wait for. Wall time is compared
beside it. Each command's CPU and wall times are given as mean ± σ
(sample standard deviation), min … max, and the runs that are outliers
(modified Z-score above 3.5) are warned of. The summary gives each
command's mean CPU over the least one's as ratio ± σ (the runs' relative
σ's propagated, as hyperfine's), with a 95 % confidence interval on the
ratio of the means (Fieller's, Student's t with Welch-Satterthwaite's
degrees of freedom).

Each COMMAND runs as "sh -c COMMAND" unless -N, its standard streams on
/dev/null (--show-output: bench's own). As hyperfine subtracts the
shell's start from wall time, bench measures runs of the shell with an
empty command first and subtracts their mean from every run's wall and
CPU time (each at least 0; the CPU left is split in the run's own ratio
of user to kernel time); the output and the JSON say so.

  -r, --runs N             timed runs of each command (default: 10, or
                           more to fill 3 s)
  -w, --warmup N           runs before the timed ones, not counted
  -p, --prepare CMD        run CMD (with the shell) before each run; once
                           for every command, or once per command in order
  -n, --command-name NAME  the name the output and exports give the next
                           command, in order (default: the command itself)
  -N, --shell=none         run without a shell: COMMAND is split on spaces
                           (no quoting); nothing is subtracted
  -S, --shell SHELL        the shell (default sh)
  -i, --ignore-failure     go on when a command exits non-zero
      --show-output        let the commands write to bench's stdout and
                           stderr
      --orphan-timeout D   wait up to D (a Go duration, default 10s) after
                           a command exits for the rest of its tree
      --export-json F      write the results as hyperfine's JSON, with the
                           CPU figures added (docs/commands.md)
      --export-markdown F  write the results as a Markdown table
      --export-csv F       write the results as CSV (hyperfine's columns,
                           then the CPU ones)
  -h, --help               show this help

The results go to stdout, a progress bar to stderr where it is a
terminal. Exits 0, 1 when a command failed or could not run, 2 on a
usage error.
`

// Defaults of bench's options.
const (
	benchMinRuns       = 10
	benchMinTime       = 3 * time.Second
	benchMaxAutoRuns   = 10000
	benchOrphanTimeout = 10 * time.Second
	// benchShortCPU is the mean CPU time below which the shell's start,
	// subtracted, is a large part of each run (hyperfine warns below 5
	// ms of wall time).
	benchShortCPU = 5 * time.Millisecond
	// shellRuns is how many runs of the empty shell command give the
	// mean that is subtracted.
	shellRuns = 20
)

// benchOptions is a parsed bench command line.
type benchOptions struct {
	runs, warmup  int // runs 0: automatic
	prepare       []string
	names         []string // --command-name, for the first len(names) commands
	shell         string   // "": none
	noShell       bool     // -N
	ignoreFailure bool
	showOutput    bool
	orphanTimeout time.Duration
	exportJSON    string
	exportMD      string
	exportCSV     string
	commands      []string
}

// flags are bench's options, hyperfine's names. It sets the defaults.
func (o *benchOptions) flags() *cliflag.Set {
	o.shell, o.orphanTimeout = "sh", benchOrphanTimeout
	s := &cliflag.Set{Interspersed: true}
	count := func(least int, dst *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < least {
				return fmt.Errorf("wants a whole number of at least %d", least)
			}
			*dst = n
			return nil
		}
	}
	s.Func("a number of runs", "", count(1, &o.runs), "-r", "--runs")
	s.Func("a number of runs", "", count(0, &o.warmup), "-w", "--warmup")
	s.Func("a command", "", func(v string) error { o.prepare = append(o.prepare, v); return nil }, "-p", "--prepare")
	s.Func("a name", "", func(v string) error { o.names = append(o.names, v); return nil }, "-n", "--command-name")
	s.Bool(&o.noShell, "-N")
	s.Func("a shell, or none", "", func(v string) error { o.shell = v; return nil }, "-S", "--shell")
	s.Bool(&o.ignoreFailure, "-i", "--ignore-failure")
	s.Bool(&o.showOutput, "--show-output")
	s.Func("a duration", "", func(v string) (err error) { o.orphanTimeout, err = positiveDuration(v); return err }, "--orphan-timeout")
	s.Path(&o.exportJSON, "--export-json")
	s.Path(&o.exportMD, "--export-markdown")
	s.Path(&o.exportCSV, "--export-csv")
	return s
}

// check checks what the options and commands say together, once parsed.
func (o *benchOptions) check() error {
	if o.noShell || o.shell == "none" {
		o.shell = ""
	}
	switch {
	case len(o.commands) == 0:
		return errors.New("no command given")
	case len(o.names) > len(o.commands):
		return fmt.Errorf("%d --command-name names for %d commands", len(o.names), len(o.commands))
	case len(o.prepare) > 1 && len(o.prepare) != len(o.commands):
		return fmt.Errorf("%d --prepare commands for %d commands: give one, or one per command", len(o.prepare), len(o.commands))
	}
	for _, c := range o.commands {
		if o.shell == "" && len(strings.Fields(c)) == 0 {
			return errors.New("an empty command cannot run without a shell")
		}
	}
	return nil
}

// benchRun is one timed run of a command: its tree's times, net of the
// shell's start where that is subtracted.
type benchRun struct {
	wall, user, system time.Duration
	exit               *int // nil: ended by a signal
	signal             syscall.Signal
	maxRSS             int64  // KiB, the largest process's (wait4)
	peakKiB            *int64 // the tree's memory at its highest; nil: unknown
	peakSource         string // what peakKiB counts (recorder.Memory.Source)
	orphans, killed    int
	waited             time.Duration // after the command exited, for its orphans
	complete           bool
	problem            string // why not complete
}

func (r benchRun) cpu() time.Duration { return r.user + r.system }

// benchResult is a command's runs and their statistics, in seconds.
type benchResult struct {
	command                 string
	runs                    []benchRun
	cpu, wall, user, system summary
	cpuOutliers             int
	wallOutliers            int
}

// shellCost is the mean of the empty shell command's runs, subtracted from
// each run; zero where there is no shell.
type shellCost struct {
	command            string // as run, "" for none
	runs               int
	wall, user, system time.Duration
}

// bencher runs the commands.
type bencher struct {
	opts     benchOptions
	env      Env
	progress *progressBar // nil where stderr is not a terminal
	shell    shellCost
	null     *os.File
}

// benchCommand implements "cputime bench".
func benchCommand(env Env, args []string) int {
	var opts benchOptions
	rest, code, done := parseOptions(env, "bench", benchUsage, opts.flags(), args)
	if done {
		return code
	}
	opts.commands = rest
	if err := opts.check(); err != nil {
		fmt.Fprintf(env.Stderr, "%s: bench: %v\n%s", programName, err, benchUsage)
		return exitUsage
	}
	// The export files are created before the first run: a wrong path
	// costs the error, not the benchmark.
	exports, err := createBenchExports(opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: bench: %v\n", programName, err)
		return exitFailed
	}
	defer exports.discard()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: bench: %v\n", programName, err)
		return exitFailed
	}
	defer null.Close()
	b := &bencher{opts: opts, env: env, null: null}
	if isTerminal(env.Stderr) {
		b.progress = &progressBar{w: env.Stderr}
	}
	if opts.shell != "" {
		if err := b.measureShell(); err != nil {
			fmt.Fprintf(env.Stderr, "%s: bench: measuring the shell's start (%s -c ''): %v\n", programName, opts.shell, err)
			return exitFailed
		}
		fmt.Fprintf(env.Stdout, "Shell start (%s, mean of %d runs): CPU %s (user %s, system %s), wall %s: subtracted from every run.\n\n",
			b.shell.command, b.shell.runs, fmtMs(b.shell.user+b.shell.system), fmtMs(b.shell.user), fmtMs(b.shell.system), fmtMs(b.shell.wall))
	}
	var results []benchResult
	for i, c := range opts.commands {
		res, err := b.benchmark(i, c)
		if err != nil {
			fmt.Fprintf(env.Stderr, "%s: bench: %s: %v\n", programName, sanitize(c), err)
			return exitFailed
		}
		writeBenchResult(env.Stdout, res, b.shell)
		results = append(results, res)
	}
	writeBenchSummary(env.Stdout, results)
	status := exitOK
	if err := exports.write(results, b.shell, opts); err != nil {
		fmt.Fprintf(env.Stderr, "%s: bench: %v\n", programName, err)
		status = exitFailed
	}
	return status
}

// command is the exec.Cmd of one run of c.
func (b *bencher) command(c string, show bool) *exec.Cmd {
	var cmd *exec.Cmd
	if b.opts.shell != "" {
		cmd = exec.Command(b.opts.shell, "-c", c)
	} else {
		f := strings.Fields(c)
		cmd = exec.Command(f[0], f[1:]...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = b.null, b.null, b.null
	if show {
		cmd.Stdout, cmd.Stderr = b.env.Stdout, b.env.Stderr
	}
	return cmd
}

// runOnce runs c once as a run of the benchmark: its whole tree, the
// orphans waited for.
func (b *bencher) runOnce(c string, show bool) (benchRun, error) {
	res, err := recorder.Run(context.Background(), b.command(c, show), recorder.RunOptions{
		AdoptOrphans: true, // bench has no other children
		WaitOrphans:  b.opts.orphanTimeout,
		KillOrphans:  true, // nothing of a run may land in the next
	})
	if err != nil {
		return benchRun{}, err
	}
	r := benchRun{wall: res.Wall, user: res.TreeUser, system: res.TreeKernel, complete: res.TreeValid}
	if !res.TreeValid {
		r.problem = "the tree's times could not be read"
	}
	if u := res.TreeUsage; u != nil {
		r.maxRSS = u.MaxRSS
	}
	if m := res.Memory; m != nil {
		peak := m.PeakKiB
		r.peakKiB, r.peakSource = &peak, m.Source
	}
	if o := res.Orphans; o != nil {
		r.wall += o.Waited
		r.orphans, r.killed, r.waited = o.Reaped, o.Killed, o.Waited
		if o.TimedOut || o.Running > 0 {
			r.complete = false
			r.problem = fmt.Sprintf("the tree had not exited %v after the command: %d processes killed, %d left", b.opts.orphanTimeout, o.Killed, o.Running)
		}
	}
	if res.Stats.Excess > 0 && r.complete {
		// Tasks wait4 never counted (a parent that ignored SIGCHLD).
		r.complete = false
		r.problem = fmt.Sprintf("the recorded tasks add up to %v more than the tree's total", res.Stats.Excess)
	}
	if e := exitOf(res.State); e != nil && e.signal != 0 {
		r.signal = e.signal
	} else {
		code := res.State.ExitCode()
		r.exit = &code
	}
	return r, nil
}

// measureShell runs the shell with an empty command and keeps the means.
func (b *bencher) measureShell() error {
	var s shellCost
	s.command = b.opts.shell + " -c ''"
	for i := range shellRuns {
		b.progress.show("Measuring the shell's start", i, shellRuns, "")
		r, err := b.runOnce("", false)
		if err != nil {
			return err
		}
		s.wall += r.wall
		s.user += r.user
		s.system += r.system
	}
	b.progress.clear()
	s.runs = shellRuns
	s.wall /= shellRuns
	s.user /= shellRuns
	s.system /= shellRuns
	b.shell = s
	return nil
}

// prepare runs the --prepare command for command i, if any.
func (b *bencher) prepare(i int) error {
	if len(b.opts.prepare) == 0 {
		return nil
	}
	p := b.opts.prepare[0]
	if len(b.opts.prepare) > 1 {
		p = b.opts.prepare[i]
	}
	shell := b.opts.shell
	if shell == "" {
		shell = "sh"
	}
	cmd := exec.Command(shell, "-c", p)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = b.null, b.null, b.null
	if b.opts.showOutput {
		cmd.Stdout, cmd.Stderr = b.env.Stdout, b.env.Stderr
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the --prepare command %q: %w", p, err)
	}
	return nil
}

// benchmark runs command i's warm-ups and timed runs.
func (b *bencher) benchmark(i int, c string) (benchResult, error) {
	res := benchResult{command: c}
	if i < len(b.opts.names) {
		res.command = b.opts.names[i]
	}
	fmt.Fprintf(b.env.Stdout, "Benchmark %d: %s\n", i+1, sanitize(res.command))
	for w := range b.opts.warmup {
		b.progress.show("Performing warmup runs", w, b.opts.warmup, "")
		if err := b.prepare(i); err != nil {
			return res, err
		}
		r, err := b.runOnce(c, b.opts.showOutput)
		if err == nil {
			err = b.failed(r)
		}
		if err != nil {
			return res, err
		}
	}
	runs := b.opts.runs
	for n := 0; runs == 0 || n < runs; n++ {
		estimate := ""
		if n > 0 {
			estimate = "Current estimate: " + fmtMs(meanCPU(res.runs)) + " CPU"
		}
		b.progress.show("", n, max(runs, 1), estimate)
		start := time.Now()
		if err := b.prepare(i); err != nil {
			return res, err
		}
		r, err := b.runOnce(c, b.opts.showOutput)
		if err != nil {
			return res, err
		}
		if runs == 0 {
			// hyperfine's rule: at least benchMinRuns, and enough to
			// fill benchMinTime at the first run's pace.
			per := time.Since(start)
			runs = benchMinRuns
			if per > 0 {
				runs = int(min(max(math.Ceil(float64(benchMinTime)/float64(per)), benchMinRuns), benchMaxAutoRuns))
			}
		}
		b.subtractShell(&r)
		res.runs = append(res.runs, r)
		if err := b.failed(r); err != nil {
			return res, err
		}
	}
	b.progress.clear()
	res.summarize()
	return res, nil
}

// failed is the error for a run that failed, unless -i: hyperfine's rule,
// warm-ups included.
func (b *bencher) failed(r benchRun) error {
	if b.opts.ignoreFailure || (r.exit != nil && *r.exit == 0) {
		return nil
	}
	b.progress.clear()
	how := "was ended by signal " + signalName(r.signal)
	if r.exit != nil {
		how = "exited with status " + strconv.Itoa(*r.exit)
	}
	return fmt.Errorf("the command %s (use -i, --ignore-failure, to go on; --show-output to see why)", how)
}

// summarize fills in res's statistics from its runs.
func (res *benchResult) summarize() {
	secs := func(f func(benchRun) time.Duration) []float64 {
		out := make([]float64, len(res.runs))
		for i, r := range res.runs {
			out[i] = f(r).Seconds()
		}
		return out
	}
	cpu, wall := secs(benchRun.cpu), secs(func(r benchRun) time.Duration { return r.wall })
	res.cpu, res.wall = summarize(cpu), summarize(wall)
	res.user = summarize(secs(func(r benchRun) time.Duration { return r.user }))
	res.system = summarize(secs(func(r benchRun) time.Duration { return r.system }))
	res.cpuOutliers, res.wallOutliers = outliers(cpu), outliers(wall)
}

func meanCPU(runs []benchRun) time.Duration {
	var sum time.Duration
	for _, r := range runs {
		sum += r.cpu()
	}
	return sum / time.Duration(max(len(runs), 1))
}

// subtractShell takes the shell's mean start off r's wall and CPU time,
// each at least 0. The CPU is taken off the total, and what is left split
// in r's own ratio of user to system time: the kernel splits a short
// process's time by tick samples, so the shell's mean user and system
// times, taken off one by one, would each be off by up to a tick.
func (b *bencher) subtractShell(r *benchRun) {
	r.wall = max(r.wall-b.shell.wall, 0)
	total := r.cpu()
	if total <= 0 {
		return
	}
	net := max(total-b.shell.user-b.shell.system, 0)
	r.user = time.Duration(float64(net) * float64(r.user) / float64(total))
	r.system = net - r.user
}

// writeBenchResult writes one command's statistics, in hyperfine's layout
// with CPU time first; shell is what was subtracted from each run.
func writeBenchResult(w io.Writer, res benchResult, shell shellCost) {
	u := unitFor(res.cpu.mean)
	fmt.Fprintf(w, "  CPU  (mean ± σ):    %s ± %s    [User: %s, System: %s]\n",
		u.pad(res.cpu.mean), u.pad(res.cpu.stddev), u.format(res.user.mean), u.format(res.system.mean))
	fmt.Fprintf(w, "  Range (min … max):  %s … %s    %d runs\n", u.pad(res.cpu.min), u.pad(res.cpu.max), res.cpu.n)
	uw := unitFor(res.wall.mean)
	fmt.Fprintf(w, "  Wall (mean ± σ):    %s ± %s    [Range: %s … %s]\n",
		uw.pad(res.wall.mean), uw.pad(res.wall.stddev), uw.format(res.wall.min), uw.format(res.wall.max))
	orphans, killed, incomplete := 0, 0, 0
	var waited time.Duration
	for _, r := range res.runs {
		orphans += r.orphans
		killed += r.killed
		waited += r.waited
		if !r.complete {
			incomplete++
		}
	}
	if orphans > 0 {
		fmt.Fprintf(w, "  Orphans: %s a run, waited for (the last exited %s after the command, mean); in the CPU time, and in the wall\n",
			strconv.FormatFloat(float64(orphans)/float64(len(res.runs)), 'g', 3, 64), fmtMs(waited/time.Duration(len(res.runs))))
	}
	if incomplete > 0 {
		why := ""
		for _, r := range res.runs {
			if !r.complete {
				why = r.problem
				break
			}
		}
		fmt.Fprintf(w, "  Warning: %d of %d runs incomplete: %s\n", incomplete, len(res.runs), why)
	}
	if res.cpuOutliers > 0 {
		fmt.Fprintf(w, "  Warning: %d of %d runs' CPU times are statistical outliers (modified Z-score > %.1f). Something disturbed the command's own work (a cold cache, the CPU's clock, a first run that builds a cache): consider --warmup or --prepare.\n",
			res.cpuOutliers, len(res.runs), outlierZ)
	}
	if shell.command != "" && res.cpu.mean < benchShortCPU.Seconds() {
		fmt.Fprintf(w, "  Warning: the command's CPU time is under %v, not far above the shell's start subtracted from it (%s): -N runs it without the shell.\n",
			benchShortCPU, fmtMs(shell.user+shell.system))
	}
	if res.wallOutliers > 0 {
		fmt.Fprintf(w, "  Note: %d of %d runs' wall times are statistical outliers (modified Z-score > %.1f): other work on the machine, which the CPU times leave out.\n",
			res.wallOutliers, len(res.runs), outlierZ)
	}
	fmt.Fprintln(w)
}

// writeBenchSummary compares the commands by CPU time, wall time beside.
func writeBenchSummary(w io.Writer, results []benchResult) {
	if len(results) < 2 {
		return
	}
	ref := leastCPU(results)
	fmt.Fprintln(w, "Summary, by CPU time (the tree's user + system: every process counted, and far less spread by other work than wall time)")
	fmt.Fprintf(w, "  '%s' used the least CPU\n", sanitize(results[ref].command))
	for i, r := range results {
		if i == ref {
			continue
		}
		c := ratioOf(r.cpu, results[ref].cpu)
		ci := "no 95% CI: the means are not told apart from 0"
		switch {
		case r.cpu.n < 2 || results[ref].cpu.n < 2:
			ci = "no 95% CI from a single run"
		case c.ok:
			ci = fmt.Sprintf("95%% CI %.3f … %.3f", c.lo, c.hi)
		}
		wr := ratioOf(r.wall, results[ref].wall)
		fmt.Fprintf(w, "    '%s' ran %s times as much CPU (%s); wall time %s times as long\n",
			sanitize(r.command), plusMinus(c.r, c.sigma), ci, plusMinus(wr.r, wr.sigma))
	}
}

// plusMinus is "r ± σ" with two decimals, or more where σ would read 0.00
// (up to four).
func plusMinus(r, sigma float64) string {
	d := 2
	for d < 4 && sigma > 0 && sigma < 0.5*math.Pow(10, -float64(d)) {
		d++
	}
	return strconv.FormatFloat(r, 'f', d, 64) + " ± " + strconv.FormatFloat(sigma, 'f', d, 64)
}

// leastCPU is the index of the result with the least mean CPU time.
func leastCPU(results []benchResult) int {
	ref := 0
	for i, r := range results {
		if r.cpu.mean < results[ref].cpu.mean {
			ref = i
		}
	}
	return ref
}

// unit is how a figure in seconds is shown: ms below a second, as
// hyperfine does.
type unit struct {
	name  string
	scale float64
	prec  int
}

func unitFor(mean float64) unit {
	if mean < 1 {
		return unit{"ms", 1e3, 1}
	}
	return unit{"s", 1, 3}
}

func (u unit) format(s float64) string {
	return strconv.FormatFloat(s*u.scale, 'f', u.prec, 64) + " " + u.name
}

func (u unit) pad(s float64) string { return fmt.Sprintf("%9s", u.format(s)) }

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms"
}
