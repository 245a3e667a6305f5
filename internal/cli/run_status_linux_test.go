package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// noCores keeps the test's children (and theirs) from dumping core into
// the checkout, until the test ends.
func noCores(t *testing.T) {
	t.Helper()
	var was unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &was); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: was.Max}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_CORE, &was) })
}

// -o, --trace and --timeline are created before CMD starts: a path that
// cannot be created is an error (fs.ErrNotExist here) and CMD never runs.
func TestRunOutputsCreatedFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "out")
	if _, err := createOutputs("", missing, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("createOutputs(%s): %v, want fs.ErrNotExist", missing, err)
	}
	for _, opt := range []string{"-o", "--trace", "--timeline"} {
		marker := filepath.Join(dir, "ran"+opt)
		_, stderr, status := runCLI(t, System{}, "run", opt, missing, "--", "sh", "-c", "echo > "+marker)
		if status != exitFailed || !strings.Contains(stderr, "no such file or directory") {
			t.Errorf("%s %s: status %d, %q", opt, missing, status, stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s %s: CMD ran", opt, missing)
		}
	}
}

// How CMD ended, against wait's own word on the same command run directly
// (an independent source): an exit code, or a signal with or without a
// core dump, each field present.
func TestRunExitStatus(t *testing.T) {
	dir := t.TempDir()
	for _, script := range []string{
		"exit 3",
		"kill -KILL $$",
		// A core dump, where the system writes one: in the temporary folder.
		"cd " + dir + " && ulimit -c unlimited && kill -SEGV $$",
	} {
		direct := exec.Command("sh", "-c", script)
		direct.Run()
		ws := direct.ProcessState.Sys().(syscall.WaitStatus)
		_, stderr, _ := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", script)
		var raw map[string]json.RawMessage
		var rec runJSON
		if err := json.Unmarshal([]byte(stderr), &raw); err != nil {
			t.Fatalf("%s: %v: %s", script, err, stderr)
		}
		json.Unmarshal([]byte(stderr), &rec)
		var fields map[string]any
		json.Unmarshal(raw["exit"], &fields)
		for _, f := range []string{"code", "signal", "signal_name", "core_dumped"} {
			if _, ok := fields[f]; !ok {
				t.Errorf("%s: exit has no %s: %s", script, f, raw["exit"])
			}
		}
		e := rec.Exit
		if e == nil {
			t.Errorf("%s: no exit: %s", script, stderr)
			continue
		}
		switch {
		case ws.Signaled():
			if e.Code != nil || e.Signal == nil || *e.Signal != int(ws.Signal()) || *e.SignalName != unix.SignalName(ws.Signal()) || e.CoreDumped != ws.CoreDump() {
				t.Errorf("%s: exit %s, wait says signal %d, core dumped %v", script, raw["exit"], ws.Signal(), ws.CoreDump())
			}
		default:
			if e.Code == nil || *e.Code != ws.ExitStatus() || e.Signal != nil || e.CoreDumped {
				t.Errorf("%s: exit %s, wait says status %d", script, raw["exit"], ws.ExitStatus())
			}
		}
		human := "\tExit status: 3\n"
		if ws.Signaled() {
			human = "\tCommand terminated by signal " + strconv.Itoa(int(ws.Signal())) + " (" + unix.SignalName(ws.Signal()) + ")"
			if ws.CoreDump() {
				human += ", core dumped"
			}
		}
		if _, stderr, _ := runCLI(t, System{}, "run", "--", "sh", "-c", script); !strings.Contains(stderr, human) {
			t.Errorf("%s: human record without %q:\n%s", script, human, stderr)
		}
	}
}

// Maximum RSS and context switches, against our own RUSAGE_CHILDREN (what
// the kernel's wait accounting gave us as CMD's parent, read before and
// after): the context switches grow by the record's, and the maximum RSS,
// the largest of any child so far (CMD touches 96 MiB), is the record's.
// Wall time and %CPU against the test's own clock and the record's totals.
func TestRunRusage(t *testing.T) {
	// The first process Go starts is preceded by the runtime's check that
	// clone(CLONE_PIDFD) works: a child that exits at once, with one
	// context switch, reaped by us. Run alone, the test counted it.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &before)
	t0 := time.Now()
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c",
		"sleep 0.01; "+cliHelperEnv+"=rss:96 "+os.Args[0]+" -test.run=^$")
	wall := time.Since(t0)
	unix.Getrusage(unix.RUSAGE_CHILDREN, &after)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil || rec.MaxRSSKiB == nil || rec.WallNs == nil || rec.CPUPercent == nil {
		t.Fatalf("record %v: %s", err, stderr)
	}
	if *rec.MaxRSSKiB < 96<<10 || *rec.MaxRSSKiB != int64(after.Maxrss) {
		t.Errorf("max_rss_kib %d; touched 96 MiB, RUSAGE_CHILDREN says %d KiB", *rec.MaxRSSKiB, after.Maxrss)
	}
	if v := int64(after.Nvcsw - before.Nvcsw); *rec.VoluntaryContextSwitches != v || v == 0 {
		t.Errorf("voluntary_context_switches %d, RUSAGE_CHILDREN grew by %d", *rec.VoluntaryContextSwitches, v)
	}
	if v := int64(after.Nivcsw - before.Nivcsw); *rec.InvoluntaryContextSwitches != v {
		t.Errorf("involuntary_context_switches %d, RUSAGE_CHILDREN grew by %d", *rec.InvoluntaryContextSwitches, v)
	}
	if w := time.Duration(*rec.WallNs); w < 10*time.Millisecond || w > wall {
		t.Errorf("wall_ns %v; CMD slept 10 ms, the run took %v", w, wall)
	}
	cpu := float64(*rec.TotalUserNs + *rec.TotalKernelNs)
	if want := cpu / float64(*rec.WallNs) * 100; *rec.CPUPercent < want-0.1 || *rec.CPUPercent > want+0.1 {
		t.Errorf("cpu_percent %v, totals over wall %v", *rec.CPUPercent, want)
	}
}

// A daemon that double-forks stays in the tree: run, the subreaper, reaps
// it, and its CPU (200 ms, burnt after its parent exited) is in the tree's
// total. CMD waits until the daemon is gone (reaped: kill -0 fails), so the
// daemon is reaped while CMD runs.
func TestRunSubreaperKeepsDaemon(t *testing.T) {
	dir := t.TempDir()
	script := `( ` + cliHelperEnv + `=burn:200 "$0" -test.run='^$' & echo $! > ` + dir + `/pid ); read p < ` + dir + `/pid; ` +
		`while kill -0 $p 2>/dev/null; do sleep 0.01; done`
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", script, os.Args[0])
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if rec.Subreaper == nil || !*rec.Subreaper {
		t.Skipf("run could not be a subreaper: %s", stderr)
	}
	if *rec.OrphansReaped != 1 || *rec.OrphansRunning != 0 {
		t.Errorf("orphans reaped %d, running %d; want 1 and 0", *rec.OrphansReaped, *rec.OrphansRunning)
	}
	if tot := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs); tot < 200*time.Millisecond {
		t.Errorf("tree total %v: without the daemon's 200 ms", tot)
	}
	_, stderr, _ = runCLI(t, System{}, "run", "--", "sh", "-c", script, os.Args[0])
	if !strings.Contains(stderr, "with 1 orphan cputime reaped as the tree's subreaper") {
		t.Errorf("the headline does not say so:\n%s", stderr)
	}
}
