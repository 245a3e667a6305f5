package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// runUseJSON is what run's record says of where the tree's CPU and memory
// went, beside runJSON's fields.
type runUseJSON struct {
	runJSON
	ByCommand            []jsonCommand    `json:"by_command"`
	TreePeakMemoryKiB    *int64           `json:"tree_peak_memory_kib"`
	TreePeakMemorySource *string          `json:"tree_peak_memory_source"`
	Parallelism          *jsonParallelism `json:"parallelism"`
}

func runUse(t *testing.T, args ...string) (runUseJSON, string) {
	t.Helper()
	stdout, stderr, status := runCLI(t, System{}, append([]string{"run", "--json"}, args...)...)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runUseJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	needRecording(t, rec.runJSON)
	return rec, stdout
}

// by-command: a shell starts 4 "alpha" burning 30 ms and 2 "beta"
// burning 60 ms of their own CPU clocks together (the test binary under
// two names: a process is named for what it exec'd). by_command counts
// each name's processes and their CPU within what their own clocks
// burned, and most alive at once between 2 and all of them; the shell
// counts as sh, every name appears once, the most CPU first.
func TestRunByCommand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"alpha", "beta"} {
		if err := os.Symlink(os.Args[0], filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf("for i in 1 2 3 4; do %[3]s=burn:30 %[1]s '-test.run=^$' & done; for i in 1 2; do %[3]s=burn:60 %[2]s '-test.run=^$' & done; wait",
		filepath.Join(dir, "alpha"), filepath.Join(dir, "beta"), cliHelperEnv)
	rec, _ := runUse(t, "--", "sh", "-c", script)
	seen := map[string]jsonCommand{}
	for i, c := range rec.ByCommand {
		if _, dup := seen[string(c.Name)]; dup {
			t.Errorf("%q listed twice", c.Name)
		}
		seen[string(c.Name)] = c
		if i > 0 && c.UserNs+c.KernelNs > rec.ByCommand[i-1].UserNs+rec.ByCommand[i-1].KernelNs {
			t.Errorf("by_command not by CPU, most first: %+v", rec.ByCommand)
		}
	}
	for _, w := range []struct {
		name string
		n    int
		ms   time.Duration
	}{{"alpha", 4, 30}, {"beta", 2, 60}} {
		c, ok := seen[w.name]
		if !ok {
			t.Fatalf("no %s in by_command: %+v", w.name, rec.ByCommand)
		}
		cpu := time.Duration(c.UserNs + c.KernelNs)
		// Each burned w.ms of its process clock, from its start: the
		// counters miss the first instants of each switch (a few %), and
		// the exit comes after.
		lo, hi := time.Duration(w.n)*w.ms*time.Millisecond*93/100, time.Duration(w.n)*(w.ms*time.Millisecond*115/100+5*time.Millisecond)
		if c.Processes != w.n || cpu < lo || cpu > hi || c.PeakConcurrent < 2 || c.PeakConcurrent > w.n || c.Threads < w.n {
			t.Errorf("%s: %+v (%v): want %d processes, %v..%v, 2..%d at once", w.name, c, cpu, w.n, lo, hi, w.n)
		}
	}
	t.Logf("by_command %+v", rec.ByCommand)
	if c := seen["sh"]; c.Processes != 1 || c.PeakConcurrent != 1 {
		t.Errorf("sh: %+v, want the one shell", c)
	}
}

// parallelism: a program whose 6 threads each burn 60 ms of their own CPU
// clock, 3 at a time (each reports when it ran). The most threads alive
// at once is at least the most of its workers that were running at once
// by their own reports, plus the main thread; the average holds at least
// the workers' own CPU over the wall time; the peak is at least the
// average and, from samples (--trace asks for them), within what the
// machine's CPUs can run.
func TestRunParallelism(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.json")
	rec, stdout := runUse(t, "--trace", trace, "--", "env", cliHelperEnv+"=threads:6:60:3", os.Args[0], "-test.run=^$")
	p := rec.Parallelism
	if p == nil || rec.WallNs == nil {
		t.Fatalf("no parallelism: %+v", rec)
	}
	type span struct{ born, done int64 }
	var spans []span
	var own time.Duration
	for sc := bufio.NewScanner(strings.NewReader(stdout)); sc.Scan(); {
		var tid int
		var ns, born, done int64
		fmt.Sscan(sc.Text(), &tid, &ns, &born, &done)
		spans = append(spans, span{born, done})
		own += time.Duration(ns)
	}
	if len(spans) != 6 {
		t.Fatalf("the program reported %d threads: %q", len(spans), stdout)
	}
	most := 0
	for _, a := range spans {
		n := 0
		for _, b := range spans {
			if b.born <= a.born && a.born < b.done {
				n++
			}
		}
		most = max(most, n)
	}
	if p.PeakThreadsAlive < most+1 {
		t.Errorf("peak_threads_alive %d, but %d workers ran at once by their own reports, and the main thread", p.PeakThreadsAlive, most)
	}
	if floor := float64(own) / float64(*rec.WallNs); p.Average < floor*0.95 {
		t.Errorf("average %v, below the workers' own CPU over the wall time, %v", p.Average, floor)
	}
	t.Logf("parallelism %+v; %d workers at once", *p, most)
	cpus := float64(runtime.NumCPU())
	if !p.PeakFromSamples || p.Peak < p.Average*0.9 || p.Peak > cpus*1.25+0.1 || p.PeakWindowNs != int64(10*time.Millisecond) {
		t.Errorf("parallelism %+v: want from samples, a peak from the average to %v CPUs over 10 ms windows", *p, cpus)
	}
}

// tree-peak-memory: two processes holding 64 MiB each at once. The tree's
// peak holds both, where max_rss_kib (wait4's) is one process's; its
// source is a cgroup where run can make one (root here), else it is
// sampled and the record's problems say it is an estimate.
func TestRunTreePeakMemory(t *testing.T) {
	rec, _ := runUse(t, "--", "env", cliHelperEnv+"=memtree:2:64:300", os.Args[0], "-test.run=^$")
	if rec.TreePeakMemoryKiB == nil || rec.TreePeakMemorySource == nil || rec.MaxRSSKiB == nil {
		t.Fatalf("no tree peak memory: %+v", rec)
	}
	pk, want := *rec.TreePeakMemoryKiB, int64(2*64<<10)
	if pk < want*9/10 || pk > want+3*40<<10+16<<10 {
		t.Errorf("tree_peak_memory_kib %d for 2 x 64 MiB held together", pk)
	}
	if *rec.MaxRSSKiB >= want {
		t.Errorf("max_rss_kib %d holds both: the test shows nothing", *rec.MaxRSSKiB)
	}
	flagged := strings.Contains(strings.Join(rec.Recording.Problems, "|"), "peak memory is an estimate")
	switch src := *rec.TreePeakMemorySource; src {
	case "sampled":
		if !flagged || rec.Recording.Complete {
			t.Errorf("sampled, but problems %q", rec.Recording.Problems)
		}
	case "cgroup v1 memory.max_usage_in_bytes", "cgroup v2 memory.peak":
		if flagged {
			t.Errorf("from %s, yet flagged: %q", src, rec.Recording.Problems)
		}
	default:
		t.Errorf("source %q", src)
	}
	t.Logf("tree peak %d KiB (%s), max RSS %d KiB", pk, *rec.TreePeakMemorySource, *rec.MaxRSSKiB)
}
