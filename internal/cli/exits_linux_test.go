package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/taskstats"
	"golang.org/x/sys/unix"
)

const exitsHelperEnv = "CPUTIME_EXITS_HELPER"

// TestExitsHelperProcess is the child of the exits tests, not a test:
// "threads" starts 3 threads that each burn 5 ms of their own CPU, print
// their id and exit, then exits; "exits ARGS..." runs cputime exits.
func TestExitsHelperProcess(t *testing.T) {
	mode := os.Getenv(exitsHelperEnv)
	if mode == "" {
		return // run by go test, not as the child: nothing to do, and not a skip
	}
	if strings.HasPrefix(mode, "exits ") {
		os.Exit(Run(Env{Stdout: os.Stdout, Stderr: os.Stderr, Source: System{}}, strings.Fields(mode)))
	}
	runtime.LockOSThread() // the threads below must not end on the main thread
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			var ts unix.Timespec
			for ts.Nano() < 5e6 {
				unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
			}
			mu.Lock()
			fmt.Printf("tid %d\n", unix.Gettid())
			mu.Unlock()
		}()
	}
	wg.Wait()
	os.Exit(0)
}

func exitsHelper(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestExitsHelperProcess$")
	cmd.Env = append(os.Environ(), exitsHelperEnv+"="+mode)
	return cmd
}

// tick: a task's exact runtime in its exit record is as of its last
// context switch or scheduler tick (10 ms at HZ=100, the slowest); the
// parent's rusage comes after its last switch, and after the teardown that
// follows the record.
const exitsTick = 10 * time.Millisecond

// exitsTeardown is what a process's exit may run after its last thread's
// record, which comes before the address space is torn down: about a
// millisecond for the threaded child here, quiet; several times that when
// it is built with the race detector, whose shadow memory goes with it,
// and more again beside the other packages' race-built tests
// (docs/figures.md).
func exitsTeardown() time.Duration {
	if raceEnabled {
		return 20 * time.Millisecond
	}
	return 3 * time.Millisecond
}

// raceEnabled says whether the tests run under the race detector
// (race_test.go).
var raceEnabled bool

func waitRusage(ps *os.ProcessState) time.Duration {
	ru := ps.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cputime exits --json while known children exit: each one's rows are
// there, with the times their parent's wait reports and the wall-clock
// bracket of their run.
func TestExitsLive(t *testing.T) {
	if err := taskstats.Check(); err != nil {
		t.Skipf("no exit records here: %v", err)
	}
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	status := make(chan int, 1)
	go func() {
		s := Run(Env{Stdout: pw, Stderr: &stderr, Source: System{}}, []string{"exits", "--json", "--duration", "3s"})
		pw.Close()
		status <- s
	}()
	var mu sync.Mutex
	var rows []exitRow
	sawPid := func(pid int) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			if r.PID == uint32(pid) {
				return true
			}
		}
		return false
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var r exitRow
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("not JSON: %q: %v", sc.Text(), err)
				continue
			}
			mu.Lock()
			rows = append(rows, r)
			mu.Unlock()
		}
	}()
	// Until the stream shows a child, it may not be registered yet.
	deadline := time.Now().Add(2 * time.Second)
	for {
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if waitUntil(50*time.Millisecond, func() bool { return sawPid(c.Process.Pid) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of a child within 2 s; stderr: %s", stderr.String())
		}
	}

	sh := exec.Command("sh", "-c", `i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done; exit 3`)
	before := time.Now()
	if err := sh.Run(); err == nil || sh.ProcessState.ExitCode() != 3 {
		t.Fatalf("sh: %v", err)
	}
	after := time.Now()
	thr := exitsHelper("threads")
	thrStart := time.Now()
	out, err := thr.Output()
	if err != nil {
		t.Fatal(err)
	}
	thrDone := time.Now()
	if s := <-status; s != exitOK {
		t.Errorf("status %d; stderr: %s", s, stderr.String())
	}
	<-scanned
	mu.Lock()
	defer mu.Unlock()

	// The rows of a child of this test: its pid, and a life within the
	// child's. The listener hears every exit on the machine for 3 s, and
	// other tests (other packages run beside this one) create thousands of
	// tasks, steering pids back (ns_last_pid) and wrapping them (pid_max,
	// often 32,768): another task can have had the child's pid
	// before the child was created, or take it once the child is reaped
	// (its zombie holds it until then). A row is the child's when it
	// exited after the child was started and was created before the
	// child was reaped.
	ours := func(r exitRow, pid int, start, reaped time.Time) bool {
		if r.PID != uint32(pid) {
			return false
		}
		exit, _ := time.Parse(time.RFC3339Nano, r.ExitTime)
		if exit.Before(start) {
			return false
		}
		if r.CreationTime != nil {
			created, _ := time.Parse(time.RFC3339Nano, *r.CreationTime)
			return created.Before(reaped)
		}
		return true
	}

	// The shell: one process row.
	var shRows []exitRow
	for _, r := range rows {
		if ours(r, sh.Process.Pid, before, after) {
			shRows = append(shRows, r)
		}
	}
	if len(shRows) != 1 {
		t.Fatalf("%d rows for sh %d, want 1: %+v", len(shRows), sh.Process.Pid, shRows)
	}
	r := shRows[0]
	ru := waitRusage(sh.ProcessState)
	got := time.Duration(r.TotalNs)
	exited, _ := time.Parse(time.RFC3339Nano, r.ExitTime)
	var created time.Time
	if r.CreationTime != nil {
		created, _ = time.Parse(time.RFC3339Nano, *r.CreationTime)
	}
	t.Logf("sh %d: total %v (wait rusage %v), exit %v after the wait returned, created %v after the run began",
		sh.Process.Pid, got, ru, exited.Sub(after), created.Sub(before))
	switch {
	case r.Kind != "process" || r.TID == nil || *r.TID != uint32(sh.Process.Pid) || r.Name != "sh":
		t.Errorf("row %+v: want a process row of sh with its thread id", r)
	case r.PPID == nil || *r.PPID != uint32(os.Getpid()):
		t.Errorf("parent %v, want %d", r.PPID, os.Getpid())
	case r.ExitTimeSource != "received" && r.ExitTimeSource != "kernel_second",
		r.ExitTimeSource == "kernel_second" && exited.Nanosecond() != 0:
		// A record that arrived after the end of the wall-clock second it
		// was made in (the reader delayed, an exit late in its second) is
		// dated by that second's end.
		t.Errorf("exit time source %q (exit %v), want received, or kernel_second on a whole second", r.ExitTimeSource, exited)
	case r.ExitCode == nil || *r.ExitCode != 3:
		t.Errorf("exit code %v, want 3", r.ExitCode)
	case r.UserNs == nil || r.KernelNs == nil || *r.UserNs+*r.KernelNs != r.TotalNs || !r.TotalExact:
		t.Errorf("user %v + kernel %v != exact total %d", r.UserNs, r.KernelNs, r.TotalNs)
	case got > ru+2*time.Microsecond || ru-got > exitsTick+exitsTeardown():
		t.Errorf("total %v, wait rusage %v: want at most it, within a tick + %v", got, ru, exitsTeardown())
	case exited.Before(before) || exited.After(after.Add(time.Second)):
		t.Errorf("exit time %v outside [%v, wait's return + 1 s]", exited, before)
	case created.Before(before.Add(-time.Millisecond)) || created.Add(-max(exited.Sub(after), 0)).After(after):
		// Creation is dated by the arrival: it carries the reader's delay
		// past the wait's return, if any.
		t.Errorf("creation %v outside the run [%v, %v] (+ the record's delay)", created, before, after)
	}

	// The threaded child: a row per thread that exited on its own, and
	// the process row without a thread id.
	tids := map[uint32]bool{}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tid "); ok {
			n, _ := strconv.Atoi(v)
			tids[uint32(n)] = true
		}
	}
	if len(tids) != 3 {
		t.Fatalf("child printed %d thread ids: %q", len(tids), out)
	}
	pid := uint32(thr.Process.Pid)
	var proc *exitRow
	var threadSum uint64
	for i, r := range rows {
		if !ours(r, thr.Process.Pid, thrStart, thrDone) {
			continue
		}
		switch {
		case r.Kind == "process" && r.TID == nil:
			proc = &rows[i]
		case r.Kind == "thread":
			threadSum += r.TotalNs
			if tids[*r.TID] && r.TotalNs < 5e6 {
				// Each worker read 5 ms or more of its own clock.
				t.Errorf("thread %d: %v, below the 5 ms it read of its own CPU clock", *r.TID, time.Duration(r.TotalNs))
			}
			delete(tids, *r.TID)
		}
	}
	if len(tids) > 0 {
		t.Errorf("threads without a row: %v", tids)
	}
	if proc == nil {
		t.Fatalf("no process row for %d", pid)
	}
	ru = waitRusage(thr.ProcessState)
	got = time.Duration(proc.TotalNs)
	t.Logf("threaded child %d: process row %v, its thread rows %v, wait rusage %v", pid, got, time.Duration(threadSum), ru)
	if got > ru+2*time.Microsecond || ru-got > exitsTick+exitsTeardown() {
		t.Errorf("process total %v, wait rusage %v: want at most it, within a tick + %v", got, ru, exitsTeardown())
	}
	if d := time.Duration(threadSum) - got; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("thread rows add up to %v, the process row says %v", time.Duration(threadSum), got)
	}
	if proc.ExitCode == nil || *proc.ExitCode != 0 || proc.CreationTime == nil {
		t.Errorf("process row: exit code %v, creation %v", proc.ExitCode, proc.CreationTime)
	}
}

func waitUntil(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// Without CAP_NET_ADMIN, or inside a user or pid namespace of its own, the
// command fails at once with one sentence saying why. The privileges are
// dropped for a child by setpriv and unshare (util-linux).
func TestExitsRefused(t *testing.T) {
	if err := taskstats.Check(); err != nil {
		t.Skipf("needs a process that can listen, to take it away: %v", err)
	}
	for _, tc := range []struct {
		tool string
		args []string
		want string
	}{
		{"setpriv", []string{"--bounding-set=-net_admin", "--inh-caps=-net_admin", "--"}, "needs CAP_NET_ADMIN"},
		{"unshare", []string{"--user", "--map-root-user", "--pid", "--fork", "--"}, "in a user namespace of its own"},
		{"unshare", []string{"--pid", "--fork", "--"}, "in a pid namespace of its own"},
	} {
		path, err := exec.LookPath(tc.tool)
		if err != nil {
			t.Logf("skipping the %s case: %v", tc.tool, err)
			continue
		}
		cmd := exec.Command(path, append(tc.args, os.Args[0], "-test.run=^TestExitsHelperProcess$")...)
		cmd.Env = append(os.Environ(), exitsHelperEnv+"=exits --duration 1s")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		msg := stderr.String()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitFailed || !strings.HasPrefix(msg, "cputime: exits: ") ||
			!strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%s %q: %v, stderr %q; want status %d and one line with %q", tc.tool, tc.args, err, msg, exitFailed, tc.want)
		}
		t.Logf("%s %q: %s", tc.tool, tc.args, strings.TrimSpace(msg))
	}
}
