package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the programs these tests run: with
// CPUTIME_CLI_HELPER set it does that job and exits before any test runs.
//
//	burn:MS   burn MS ms of its own process CPU clock
//	tree      start 3 "burn:100" children, burn 20 ms itself, wait for them
//	cli ARG…  run the cputime command with ARG… (for signal tests)
func init() {
	job := os.Getenv("CPUTIME_CLI_HELPER")
	if job == "" {
		return
	}
	os.Unsetenv("CPUTIME_CLI_HELPER")
	switch {
	case strings.HasPrefix(job, "burn:"):
		ms, _ := strconv.Atoi(strings.TrimPrefix(job, "burn:"))
		burnProcess(time.Duration(ms) * time.Millisecond)
		os.Exit(0)
	case job == "tree":
		var kids []*exec.Cmd
		for range 3 {
			c := helperCmd("burn:100")
			if err := c.Start(); err != nil {
				os.Exit(90)
			}
			kids = append(kids, c)
		}
		burnProcess(20 * time.Millisecond)
		for _, c := range kids {
			if c.Wait() != nil {
				os.Exit(91)
			}
		}
		os.Exit(0)
	case job == "cli":
		os.Exit(Run(Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: System{}}, os.Args[1:]))
	}
	os.Exit(92)
}

func helperCmd(job string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "CPUTIME_CLI_HELPER="+job)
	return c
}

// burnProcess spins until the process's CPU clock (the runtime's start-up
// included) reaches d.
func burnProcess(d time.Duration) {
	var ts unix.Timespec
	for {
		if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil || time.Duration(ts.Nano()) >= d {
			return
		}
	}
}

type runJSON struct {
	jsonProcess
	TotalUserNs    *int64 `json:"total_user_ns"`
	TotalKernelNs  *int64 `json:"total_kernel_ns"`
	TotalPrecision string `json:"total_precision"`
}

// A tree of 3 children burning 100 ms each and a parent burning 20 ms: the
// totals are the tree's (what time(1) reports), cross-checked against
// RUSAGE_CHILDREN of this process; the top process's own fields stay its own.
func TestRunTreeTotals(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil { // the runtime's pidfd probe child, out of the way
		t.Fatal(err)
	}
	before := childrenRusage(t)
	// run's child gets our environment: env(1) sets the job.
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "env", "CPUTIME_CLI_HELPER=tree", os.Args[0], "-test.run=^$")
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if rec.TotalUserNs == nil || rec.TotalKernelNs == nil {
		t.Fatalf("no totals: %s", stderr)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	if total < 320*time.Millisecond || total > 380*time.Millisecond {
		t.Errorf("tree total %v, want within [320ms, 380ms]", total)
	}
	if d := total - used; d.Abs() > 2*time.Microsecond {
		t.Errorf("tree total %v, RUSAGE_CHILDREN grew by %v", total, used)
	}
	own := time.Duration(rec.UserNs + rec.KernelNs)
	if own < 20*time.Millisecond || own > 60*time.Millisecond {
		t.Errorf("top process's own total %v, want about 20ms", own)
	}
	if rec.TotalPrecision != "1us" {
		t.Errorf("precision %q", rec.TotalPrecision)
	}
}

// yes in the background of a shell for 1 s: the tree's total is what yes
// got of a CPU in that second (all of one on an idle machine, less when other
// work shares the CPUs), to the µs what RUSAGE_CHILDREN of this process
// says, and against time(1) where it is installed.
func TestRunTreeBackgroundJob(t *testing.T) {
	const script = "yes >/dev/null & p=$!; sleep 1; kill $p; wait"
	if err := exec.Command("true").Run(); err != nil { // the runtime's pidfd probe child, out of the way
		t.Fatal(err)
	}
	before := childrenRusage(t)
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", script)
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	if d := total - used; d.Abs() > 2*time.Microsecond {
		t.Errorf("tree total %v, RUSAGE_CHILDREN grew by %v", total, used)
	}
	// The top process (sh) alone would be a few ms: the tree total must
	// hold yes's share of the second, whatever the load (four CPU hogs on
	// two CPUs left it 0.3 s).
	if total < 100*time.Millisecond || total > 1200*time.Millisecond {
		t.Errorf("tree total %v, want yes's share of 1 s", total)
	}
	if own := time.Duration(rec.UserNs + rec.KernelNs); own > 50*time.Millisecond {
		t.Errorf("the shell's own total %v", own)
	}
	if _, err := exec.LookPath("/usr/bin/time"); err != nil {
		t.Log("time(1) cross-check skipped: install with apt-get install time")
		return
	}
	out, err := exec.Command("/usr/bin/time", "-f", "%U %S", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("time(1): %v: %s", err, out)
	}
	f := strings.Fields(string(out))
	u, _ := strconv.ParseFloat(f[len(f)-2], 64)
	s, _ := strconv.ParseFloat(f[len(f)-1], 64)
	tt := time.Duration((u + s) * float64(time.Second))
	// Two separate runs of the same job on a shared machine.
	if d := total - tt; d.Abs() > 400*time.Millisecond {
		t.Errorf("tree total %v, time(1) on the same job %v", total, tt)
	}
}

// wait on a shell (not our child) whose background job burns CPU and is
// reaped by it: the tree total includes the job, in 10 ms ticks, against
// the shell's ProcessState (its own times and its reaped children's).
func TestWaitTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; i=0; (while [ $i -lt 150000 ]; do i=$((i+1)); done) & wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out, errs string
		status    int
	}
	res := make(chan result, 1)
	go func() {
		o, e, s := runCLI(t, System{}, "wait", "--json", strconv.Itoa(cmd.Process.Pid))
		res <- result{o, e, s}
	}()
	// wait opens its handle and the stat file before it waits; let the
	// shell go only once wait is blocked on it (it cannot miss the exit:
	// the shell stays a zombie until we reap it below).
	for !waiting(cmd.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	in.Close()
	r := <-res
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if r.status != 0 {
		t.Fatalf("status %d: %s", r.status, r.errs)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(r.out), &rec); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if rec.TotalUserNs == nil {
		t.Fatalf("no totals: %s", r.out)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	shell := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	// Ticks of 10 ms, each part truncated: up to 2 ticks per part below.
	if total > shell+time.Millisecond || total < shell-40*time.Millisecond {
		t.Errorf("wait's tree total %v; the shell's ProcessState %v", total, shell)
	}
	if rec.TotalPrecision != "10ms" {
		t.Errorf("precision %q", rec.TotalPrecision)
	}
}

// waiting reports whether this process holds a pidfd of pid open: wait's
// handle, opened just before it blocks.
func waiting(pid int) bool {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err == nil && strings.Contains(string(b), "Pid:\t"+strconv.Itoa(pid)+"\n") {
			return true
		}
	}
	return false
}

// SIGTERM and SIGHUP, to cputime's whole process group (a kill of the job)
// or to cputime alone: CMD ends by the signal, and the record is printed
// with status 128+signal, as time(1) does.
func TestRunForwardsSignals(t *testing.T) {
	for _, tc := range []struct {
		sig   syscall.Signal
		group bool
	}{
		{syscall.SIGTERM, true}, {syscall.SIGTERM, false},
		{syscall.SIGHUP, true}, {syscall.SIGHUP, false},
	} {
		c := helperCmd("cli", "run", "--json", "--", "sleep", "30")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var errb strings.Builder
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once sleep runs (cputime's child has exec'd it).
		for !childIs(c.Process.Pid, "sleep") {
			time.Sleep(time.Millisecond)
		}
		target := c.Process.Pid
		if tc.group {
			target = -target
		}
		if err := syscall.Kill(target, tc.sig); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		want := 128 + int(tc.sig)
		if got := c.ProcessState.ExitCode(); got != want {
			t.Errorf("%v (group %v): status %d, want %d; stderr %s", tc.sig, tc.group, got, want, errb.String())
			continue
		}
		var rec runJSON
		if err := json.Unmarshal([]byte(errb.String()), &rec); err != nil || rec.ExitTime == nil || rec.Name != "sleep" {
			t.Errorf("%v (group %v): no record: %v: %s", tc.sig, tc.group, err, errb.String())
		}
	}
}

// childIs reports whether pid has a child whose comm is name.
func childIs(pid int, name string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(b)) {
		comm, err := os.ReadFile("/proc/" + c + "/comm")
		if err == nil && strings.TrimSpace(string(comm)) == name {
			return true
		}
	}
	return false
}
