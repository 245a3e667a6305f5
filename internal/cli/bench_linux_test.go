package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchJSON is what the tests read of --export-json.
type benchJSON struct {
	Results []struct {
		Command     string    `json:"command"`
		Mean        float64   `json:"mean"`
		Stddev      *float64  `json:"stddev"`
		Median      float64   `json:"median"`
		Min         float64   `json:"min"`
		Max         float64   `json:"max"`
		User        float64   `json:"user"`
		System      float64   `json:"system"`
		Times       []float64 `json:"times"`
		ExitCodes   []*int    `json:"exit_codes"`
		CPU         jsonStats `json:"cpu"`
		CPUTimes    []float64 `json:"cpu_times"`
		UserTimes   []float64 `json:"user_times"`
		SystemTimes []float64 `json:"system_times"`
		MaxRSSKiB   []int64   `json:"max_rss_kib"`
		Orphans     []int     `json:"orphans"`
		Complete    []bool    `json:"complete"`
		Problems    []string  `json:"problems"`
	} `json:"results"`
	Headline      string           `json:"headline"`
	Shell         jsonShell        `json:"shell"`
	OrphanTimeout float64          `json:"orphan_timeout"`
	Comparison    []jsonComparison `json:"comparison"`
}

func readBenchJSON(t *testing.T, path string) benchJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc benchJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return doc
}

// helperCommand is a -N command line that runs the test binary as job
// (internal/testutil/workload's: orphan:C:P leaves an orphan as lib/c/bgburn does):
// env(1) sets the job, the words split on spaces.
func helperCommand(job string) string {
	return "env " + cliHelperEnv + "=" + job + " GORACE=atexit_sleep_ms=0 " + os.Args[0] + " -test.run=^$"
}

// sum adds up the seconds of each run's two parts.
func sumRuns(a, b []float64) time.Duration {
	var s float64
	for i := range a {
		s += a[i] + b[i]
	}
	return time.Duration(s * 1e9)
}

// bgburn as bench's runs see it: the orphan's CPU is each run's, and the
// runs' tree CPU adds up to what wait4 gave this process for them
// (RUSAGE_CHILDREN before and after: bench runs here, and as subreaper it
// reaps the orphans), which the work's own CPU clocks bound from below.
// A bench that missed the orphan (hyperfine: 40 of 120 ms) fails both.
func TestBenchOrphanCPUIsTheRunsTree(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil { // the runtime's pidfd probe child, out of the way
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.json")
	before := childrenRusage(t)
	stdout, stderr, status := runCLI(t, System{}, "bench", "-N", "--runs", "3", "--export-json", out, helperCommand("orphan:60:20"))
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s%s", status, stdout, stderr)
	}
	doc := readBenchJSON(t, out)
	if len(doc.Results) != 1 {
		t.Fatalf("%d results for 1 command", len(doc.Results))
	}
	r := doc.Results[0]
	if len(r.UserTimes) != 3 || len(r.SystemTimes) != 3 || len(r.Times) != 3 || len(r.CPUTimes) != 3 {
		t.Fatalf("3 runs, got %d user, %d system, %d wall, %d CPU times", len(r.UserTimes), len(r.SystemTimes), len(r.Times), len(r.CPUTimes))
	}
	// Two processes a run, each rusage truncated to the microsecond in
	// two parts, and RUSAGE_CHILDREN's own truncation.
	if got := sumRuns(r.UserTimes, r.SystemTimes); (got - used).Abs() > 20*time.Microsecond {
		t.Errorf("runs' tree CPU adds up to %v, RUSAGE_CHILDREN grew by %v", got, used)
	}
	for i, cpu := range r.CPUTimes {
		if d := time.Duration(cpu * 1e9); d < 80*time.Millisecond {
			t.Errorf("run %d: tree CPU %v, below the 60 + 20 ms the work's own clocks burned", i, d)
		}
		if r.Orphans[i] != 1 || !r.Complete[i] || r.ExitCodes[i] == nil || *r.ExitCodes[i] != 0 {
			t.Errorf("run %d: %d orphans, complete %v, exit %v: want 1, true, 0", i, r.Orphans[i], r.Complete[i], r.ExitCodes[i])
		}
		if r.MaxRSSKiB[i] <= 0 {
			t.Errorf("run %d: max RSS %d KiB", i, r.MaxRSSKiB[i])
		}
	}
	if doc.Shell.Subtracted || doc.Shell.Command != nil {
		t.Errorf("-N: shell %+v, want nothing subtracted", doc.Shell)
	}
	if !strings.Contains(stdout, "Orphans: 1 a run, waited for") {
		t.Errorf("the text does not say the orphans were waited for:\n%s", stdout)
	}
	if left := ourChildren(); len(left) > 0 {
		t.Errorf("children left after bench: %v", left)
	}
}

// ourChildren lists this process's children, from every process's stat
// (the kernel may lack the children files).
func ourChildren() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid, pid int
		fmt.Sscanf(e.Name(), "%d", &pid)
		if i < 0 || pid == 0 {
			continue
		}
		if _, err := fmt.Sscanf(s[i+1:], " %s %d", &state, &ppid); err == nil && ppid == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// With the shell (sh -c COMMAND), bench measures the empty command's runs
// first and takes their mean off each run: everything it ran still adds up
// to what wait4 gave this process, the shell's runs and the net runs with
// the mean put back. The JSON has hyperfine's fields and says what was
// subtracted.
func TestBenchShellSubtractedAddsUp(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.json")
	before := childrenRusage(t)
	loop, short := "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done", "i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done"
	stdout, stderr, status := runCLI(t, System{}, "bench", "--runs", "4", "--warmup", "1", "--export-json", out, loop, short)
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s%s", status, stdout, stderr)
	}
	doc := readBenchJSON(t, out)
	if !doc.Shell.Subtracted || doc.Shell.Command == nil || *doc.Shell.Command != "sh -c ''" || doc.Shell.Runs != shellRuns {
		t.Fatalf("shell %+v, want sh -c '' subtracted, %d runs", doc.Shell, shellRuns)
	}
	if doc.Headline != "cpu" || doc.OrphanTimeout != benchOrphanTimeout.Seconds() || len(doc.Results) != 2 || len(doc.Comparison) != 1 {
		t.Fatalf("headline %q, orphan_timeout %v, %d results, %d comparisons", doc.Headline, doc.OrphanTimeout, len(doc.Results), len(doc.Comparison))
	}
	shellCPU := time.Duration((doc.Shell.User + doc.Shell.System) * 1e9)
	total := time.Duration(shellRuns) * shellCPU
	for _, r := range doc.Results {
		// The warm-ups are not in the JSON: each is one more run, its
		// CPU about a timed one's.
		total += sumRuns(r.UserTimes, r.SystemTimes) + time.Duration(len(r.UserTimes))*shellCPU
		for i, c := range r.CPUTimes {
			if d := c - (r.UserTimes[i] + r.SystemTimes[i]); d > 1e-9 || d < -1e-9 {
				t.Errorf("%s run %d: cpu_times %v is not user + system %v + %v", r.Command, i, c, r.UserTimes[i], r.SystemTimes[i])
			}
		}
		if len(r.Times) != 4 || r.Stddev == nil || r.CPU.Stddev == nil || r.Min > r.Median || r.Median > r.Max || r.CPU.Min > r.CPU.Max {
			t.Errorf("%s: times %v, stddev %v, min %v median %v max %v, cpu %+v", r.Command, r.Times, r.Stddev, r.Min, r.Median, r.Max, r.CPU)
		}
	}
	warm := used - total
	loopCPU := time.Duration(doc.Results[0].CPU.Max*1e9) + shellCPU
	if warm < 0 || warm > loopCPU+time.Duration(doc.Results[1].CPU.Max*1e9)+2*shellCPU+5*time.Millisecond {
		t.Errorf("RUSAGE_CHILDREN grew by %v; the shell's and timed runs add up to %v, which leaves %v for the two warm-ups", used, total, warm)
	}
	if loop := doc.Results[0]; loop.CPU.Mean <= doc.Results[1].CPU.Mean {
		t.Errorf("the long loop's mean CPU %v is not above the short one's %v", loop.CPU.Mean, doc.Results[1].CPU.Mean)
	}
	if c := doc.Comparison[0]; c.Reference != short || c.Command != loop || c.CPURatio <= 1.5 || c.CPURatioCI95 == nil {
		t.Errorf("comparison %+v: want the long loop over the short, with a CI", c)
	}
	for _, want := range []string{"Shell start (sh -c '', mean of 20 runs)", "Benchmark 1: " + loop, "Benchmark 2: " + short,
		"CPU  (mean ± σ):", "Range (min … max):", "Wall (mean ± σ):", "Summary, by CPU time", "'" + short + "' used the least CPU",
		"times as much CPU (95% CI"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stderr, "\r") {
		t.Errorf("a progress bar drawn where stderr is no terminal: %q", stderr)
	}
}

// An orphan that outlives --orphan-timeout is killed with its run, which
// is marked incomplete and says why; nothing is left running.
func TestBenchOrphanTimeoutKills(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.json")
	start := time.Now()
	stdout, stderr, status := runCLI(t, System{}, "bench", "--runs", "1", "--orphan-timeout", "200ms", "--export-json", out, "sleep 60 & exit 0")
	if status != 0 {
		t.Fatalf("status %d: %s%s", status, stdout, stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("bench took %v: the orphan was waited for, not killed", d)
	}
	r := readBenchJSON(t, out).Results[0]
	if r.Complete[0] || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "had not exited 200ms after the command") {
		t.Errorf("complete %v, problems %q: want incomplete, said why", r.Complete, r.Problems)
	}
	if !strings.Contains(stdout, "Warning: 1 of 1 runs incomplete") {
		t.Errorf("no warning of the incomplete run:\n%s", stdout)
	}
	if left := ourChildren(); len(left) > 0 {
		t.Errorf("children left after bench: %v", left)
	}
}

// A command that fails stops bench, unless -i; the exit codes are kept.
func TestBenchFailure(t *testing.T) {
	stdout, stderr, status := runCLI(t, System{}, "bench", "-N", "--runs", "2", "false")
	if status != exitFailed || !strings.Contains(stderr, "exited with status 1") || !strings.Contains(stderr, "--ignore-failure") {
		t.Errorf("status %d, stderr %q: want 1 and a pointer to -i", status, stderr)
	}
	out := filepath.Join(t.TempDir(), "b.json")
	stdout, stderr, status = runCLI(t, System{}, "bench", "-N", "-i", "--runs", "2", "--export-json", out, "false")
	if status != 0 {
		t.Fatalf("-i: status %d: %s%s", status, stdout, stderr)
	}
	if r := readBenchJSON(t, out).Results[0]; len(r.ExitCodes) != 2 || r.ExitCodes[0] == nil || *r.ExitCodes[0] != 1 {
		t.Errorf("exit codes %v, want 1 1", r.ExitCodes)
	}
	_, stderr, status = runCLI(t, System{}, "bench", "-N", "--runs", "1", "/nonexistent/cmd")
	if status != exitFailed || !strings.Contains(stderr, "/nonexistent/cmd") {
		t.Errorf("a command not found: status %d, %q", status, stderr)
	}
	// The export files are checked before the first run.
	_, stderr, status = runCLI(t, System{}, "bench", "-N", "--export-json", "/nonexistent/dir/b.json", "true")
	if status != exitFailed || !strings.Contains(stderr, "/nonexistent/dir/b.json") || strings.Contains(stderr, "Benchmark") {
		t.Errorf("an export that cannot be created: status %d, %q", status, stderr)
	}
}

// run --wait-orphans: the record ends when the tree has, the orphan's
// times in the total (RUSAGE_CHILDREN's growth, exactly) and its exit in
// the recording. Without it, the orphan is said to be still running.
func TestRunWaitOrphans(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(helperCommand("orphan:60:10"))
	before := childrenRusage(t)
	_, stderr, status := runCLI(t, System{}, append([]string{"run", "--json", "--wait-orphans", "--"}, args...)...)
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	if (total-used).Abs() > 6*time.Microsecond || total < 70*time.Millisecond {
		t.Errorf("total %v, RUSAGE_CHILDREN grew by %v; the work burned 70 ms", total, used)
	}
	if rec.OrphansReaped == nil || *rec.OrphansReaped != 1 || *rec.OrphansRunning != 0 {
		t.Errorf("orphans reaped %v, running %v: want 1, 0", rec.OrphansReaped, rec.OrphansRunning)
	}
	if rec.Recording != nil && rec.Recording.Error == "" {
		n, exited := 0, 0
		var walk func([]jsonChild)
		walk = func(cs []jsonChild) {
			for _, c := range cs {
				n++
				if c.ExitTime != nil {
					exited++
				}
				walk(c.Children)
			}
		}
		walk(rec.Children)
		if n < 2 || exited != n {
			t.Errorf("recording: %d of %d descendants with an exit time: want every one (env, its orphan)", exited, n)
		}
	}

	_, stderr, status = runCLI(t, System{}, append([]string{"run", "--json", "--"}, args...)...)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	rec = runJSON{}
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if rec.OrphansRunning == nil || *rec.OrphansRunning != 1 {
		t.Errorf("without --wait-orphans: orphans running %v, want 1", rec.OrphansRunning)
	}
	// The orphan is ours (we were its subreaper): reaped here, so that no
	// other test's run adopts it.
	for range 100 {
		if _, err := unix.Wait4(-1, nil, 0, nil); errors.Is(err, unix.ECHILD) {
			break
		}
	}
}

// --prepare runs before every run, warm-ups included, one per command
// where several are given; its output file counts them. --command-name
// names the commands in order.
func TestBenchPrepare(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	out := filepath.Join(dir, "b.json")
	stdout, stderr, status := runCLI(t, System{}, "bench", "-N", "--runs", "3", "--warmup", "2", "--export-json", out,
		"--prepare", "echo x >> "+a, "--prepare", "echo x >> "+b, "-n", "first", "true", "true")
	if status != 0 {
		t.Fatalf("status %d: %s%s", status, stdout, stderr)
	}
	// -n names the first command; the second keeps its own.
	if r := readBenchJSON(t, out).Results; r[0].Command != "first" || r[1].Command != "true" ||
		!strings.Contains(stdout, "Benchmark 1: first\n") || !strings.Contains(stdout, "Benchmark 2: true\n") {
		t.Errorf("names %q and %q, output:\n%s", r[0].Command, r[1].Command, stdout)
	}
	for _, f := range []string{a, b} {
		if got, err := os.ReadFile(f); err != nil || strings.Count(string(got), "x\n") != 5 {
			t.Errorf("%s: %q, %v: want 5 lines (2 warm-ups, 3 runs)", f, got, err)
		}
	}
}

// A SIGTERM that reaches run while it waits for the orphans is passed on
// to them, as to CMD before: the orphan dies of it and run reports.
func TestRunWaitOrphansPassesSignals(t *testing.T) {
	// This process lives through the SIGTERMs sent to it, whenever run's
	// own catch of them ends.
	own := make(chan os.Signal, 8)
	signal.Notify(own, syscall.SIGTERM)
	defer signal.Stop(own)
	done := make(chan struct{})
	defer close(done)
	go func() {
		// Once the orphan is ours (its shell has exited, so run is
		// waiting for it), a SIGTERM every 50 ms until run returns.
		for range 400 {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, pid := range ourChildren() {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); string(b) == "sleep\n" {
					syscall.Kill(os.Getpid(), syscall.SIGTERM)
				}
			}
		}
	}()
	start := time.Now()
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--wait-orphans", "--", "sh", "-c", "sleep 60 & exit 0")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("run took %v: the orphan did not get the SIGTERM", d)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if rec.OrphansReaped == nil || *rec.OrphansReaped != 1 || *rec.OrphansRunning != 0 {
		t.Errorf("orphans reaped %v, running %v: want 1, 0", rec.OrphansReaped, rec.OrphansRunning)
	}
}
