package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func childrenRusage(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cputime run: CMD's exit status, and a record whose final times are what
// the kernel's wait accounting gave us as CMD's parent (RUSAGE_CHILDREN,
// read before and after: an independent source, truncated to microseconds).
func TestRunRecord(t *testing.T) {
	// The first child a Go program starts is preceded by a probe child of
	// the runtime's own (checking pidfd support), reaped into
	// RUSAGE_CHILDREN too: get that out of the way first.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	before := childrenRusage(t)
	start := time.Now()
	// Shell builtins only: no grandchild adds to RUSAGE_CHILDREN.
	stdout, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo hi; exit 3")
	end := time.Now()
	used := childrenRusage(t) - before
	if status != 3 {
		t.Fatalf("status %d, want CMD's 3; stderr %s", status, stderr)
	}
	if stdout != "hi\n" {
		t.Errorf("CMD's stdout: %q", stdout)
	}
	var rec jsonProcess
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("record on stderr: %v\n%s", err, stderr)
	}
	if rec.ExitTime == nil {
		t.Fatalf("no exit time: %s", stderr)
	}
	if rec.CreationTime == nil {
		t.Fatalf("no creation time: %s", stderr)
	}
	created, _ := time.Parse(time.RFC3339Nano, *rec.CreationTime)
	exited, _ := time.Parse(time.RFC3339Nano, *rec.ExitTime)
	if exited.Before(created) || exited.Before(start) || exited.After(end) {
		t.Errorf("created %v, exited %v, run between %v and %v", created, exited, start, end)
	}
	total := time.Duration(rec.UserNs + rec.KernelNs)
	// RUSAGE_CHILDREN keeps nanoseconds and truncates each part of the
	// running sum to microseconds: the difference of two readings is off
	// by up to a microsecond per part, either way.
	if d := total - used; d.Abs() > 2*time.Microsecond {
		t.Errorf("record total %v, RUSAGE_CHILDREN grew by %v", total, used)
	}
	if rec.Name != "sh" {
		t.Errorf("name %q", rec.Name)
	}
}

func TestRunStatuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"run", "true"}, 0},
		{[]string{"run", "--", "sh", "-c", "kill -9 $$"}, 128 + 9},
		{[]string{"run", "cputime-no-such-command"}, 127},
		{[]string{"run"}, 2},
		{[]string{"run", "--bogus", "true"}, 2},
	} {
		_, stderr, status := runCLI(t, System{}, tc.args...)
		if status != tc.want {
			t.Errorf("%q: status %d, want %d (%s)", tc.args, status, tc.want, stderr)
		}
	}
	_, stderr, status := runCLI(t, System{}, "run", "true")
	if status != 0 || !strings.Contains(stderr, "(true): created") || !strings.Contains(stderr, "exited") {
		t.Errorf("human record: %q", stderr)
	}
}

// cputime wait: a process that is not our child (a shell's background job,
// which burns CPU and is reaped by the shell the moment it exits). Its
// final times cannot come from its zombie, which the shell reaps first, but
// they must be close: the shell's own wait accounting (our child's
// ProcessState includes the children it reaped) bounds them from above,
// and from below but for what the job did in its last moments.
func TestWaitNonChild(t *testing.T) {
	cmd := exec.Command("sh", "-c", "(i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done) & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := runCLI(t, System{}, "wait", "--json", strconv.Itoa(pid))
	after := time.Now()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec jsonProcess
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rec.PID != pid || rec.ExitTime == nil {
		t.Fatalf("record %+v", rec)
	}
	// Not the parent: how it ended and its rusage are unknown (null),
	// not zero, and present.
	var raw map[string]any
	json.Unmarshal([]byte(stdout), &raw)
	for _, f := range []string{"exit", "wall_ns", "max_rss_kib", "subreaper", "children", "recording"} {
		if v, ok := raw[f]; !ok || v != nil {
			t.Errorf("wait's record has %s: %v (present %v), want null", f, v, ok)
		}
	}
	if rec.CreationTime == nil {
		t.Fatalf("no creation time: %s", stderr)
	}
	created, _ := time.Parse(time.RFC3339Nano, *rec.CreationTime)
	exited, _ := time.Parse(time.RFC3339Nano, *rec.ExitTime)
	if exited.Before(created) || exited.After(after) {
		t.Errorf("created %v, exited %v, waited until %v", created, exited, after)
	}
	total := time.Duration(rec.UserNs + rec.KernelNs)
	shell := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() // the shell and its job
	// The shell itself spends a few ms; the job's times as last seen lag
	// its end by at most the handle's refresh (10 ms) and the scheduler
	// tick by which another process's clock can lag (4 ms at HZ=250).
	if total > shell || total < shell-50*time.Millisecond {
		t.Errorf("the job's final total %v; the shell and its job used %v", total, shell)
	}
	if _, _, status := runCLI(t, System{}, "wait", "1", "2"); status != 2 {
		t.Errorf("two PIDs: status %d", status)
	}
}

// Signals the terminal sends (SIGINT, SIGQUIT) must reach CMD: cputime run
// catches them for itself, and a caught signal, unlike an ignored one, is
// reset to its default in the child.
func TestRunLeavesSignalsToCommand(t *testing.T) {
	own := sigIgn(t, "/proc/self/status")
	stdout, stderr, status := runCLI(t, System{}, "run", "--", "grep", "SigIgn", "/proc/self/status")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	child, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(stdout, "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("child said %q", stdout)
	}
	const intQuit = 1<<(2-1) | 1<<(3-1) // SIGINT, SIGQUIT
	if child&intQuit != own&intQuit {
		t.Errorf("CMD ignores signals %#x, we ignore %#x", child&intQuit, own&intQuit)
	}
}

func sigIgn(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no SigIgn in %s", path)
	return 0
}
