package cli

import (
	"bufio"
	"encoding/json"
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
	created, _ := time.Parse(time.RFC3339Nano, rec.CreationTime)
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

// cputime wait: a process that is not our child (a shell's background job).
func TestWaitNonChild(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.3 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
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
	created, _ := time.Parse(time.RFC3339Nano, rec.CreationTime)
	exited, _ := time.Parse(time.RFC3339Nano, *rec.ExitTime)
	if d := exited.Sub(created); d < 300*time.Millisecond || exited.After(after) {
		t.Errorf("sleep 0.3 lived %v (created %v, exited %v)", d, created, exited)
	}
	if _, _, status := runCLI(t, System{}, "wait", "1", "2"); status != 2 {
		t.Errorf("two PIDs: status %d", status)
	}
}
