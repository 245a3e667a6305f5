package sampler_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/engine"
	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/sampler"
)

// procState is the state letter of /proc/pid/stat (the main thread's),
// read directly; 0 if the process is gone.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	return s[strings.LastIndexByte(s, ')')+2]
}

// taskIDs lists /proc/pid/task, read directly.
func taskIDs(pid int) []string {
	d, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range d {
		ids = append(ids, e.Name())
	}
	return ids
}

// waitFor polls cond (every millisecond, up to 10 s): a condition the test
// waits for, not a time it guesses.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// processClock reads pid's process CPU clock (CPUCLOCK_SCHED) directly: the
// kernel's exact total of the process, exited threads included.
func processClock(t *testing.T, pid int) time.Duration {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|2), &ts); err != nil {
		t.Fatalf("process %d's CPU clock: %v", pid, err)
	}
	return time.Duration(ts.Nano())
}

// TestLeaderExit: the main thread exits alone (/proc/PID/stat says Z) while
// another thread spins. The process is alive in every refresh, of a
// sampler that watched it before and of one started after, and its Delta
// follows the spinner; the main thread is reported exited once. When the
// last thread exits, the process is reported exited.
func TestLeaderExit(t *testing.T) {
	t.Parallel()
	c := startChild(t, "leaderexit 0")
	var spinner, main int
	if _, err := fmt.Sscanf(c.line(t), "ready %d %d", &spinner, &main); err != nil || main != c.pid {
		t.Fatalf("workload: spinner %d, main thread %d (want %d): %v", spinner, main, c.pid, err)
	}
	before, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	refresh(t, before)

	fmt.Fprintln(c.stdin)
	if l := c.line(t); l != "exiting" {
		t.Fatalf("workload said %q", l)
	}
	waitFor(t, "the main thread to be a zombie", func() bool { return procState(c.pid) == 'Z' })
	if ids := taskIDs(c.pid); len(ids) < 2 {
		t.Fatalf("threads %v: the spinner is gone", ids)
	}
	after, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	mainExited := 0
	for i := range 3 {
		for _, s := range []*sampler.Sampler{before, after} {
			who := "the sampler started before"
			if s == after {
				who = "the sampler started after"
			}
			c0 := processClock(t, c.pid)
			x := refresh(t, s)
			c1 := processClock(t, c.pid)
			if _, ok := findExited(x.ExitedProcesses, c.pid, 0); ok {
				t.Errorf("refresh %d of %s: the process reported exited, its main thread a zombie and a thread spinning", i, who)
			}
			p, ok := findTask(x.Processes, c.pid, 0)
			if !ok {
				t.Fatalf("refresh %d of %s: the process is missing (%d processes)", i, who, len(x.Processes))
			}
			if got := p.Times.Total(); got < c0 || got > c1 {
				t.Errorf("refresh %d of %s: process total %v, its CPU clock %v before and %v after", i, who, got, c0, c1)
			}
			if _, ok := findTask(x.Threads, c.pid, spinner); !ok {
				t.Errorf("refresh %d of %s: the spinning thread is missing", i, who)
			}
			if m, ok := findTask(x.Threads, c.pid, c.pid); ok {
				t.Errorf("refresh %d of %s: the zombie main thread is reported alive: %+v", i, who, m)
			}
			if _, ok := findExited(x.ExitedThreads, c.pid, c.pid); ok {
				if s == after {
					t.Errorf("refresh %d of %s: reported the main thread exited, which it never saw alive", i, who)
				}
				mainExited++
			}
		}
	}
	if mainExited != 1 {
		t.Errorf("the main thread reported exited %d times, want once", mainExited)
	}

	// The last thread exits: the process is a zombie with no live thread.
	c.stdin.Close()
	waitFor(t, "the process to exit", func() bool { return len(taskIDs(c.pid)) == 1 && procState(c.pid) == 'Z' })
	for _, s := range []*sampler.Sampler{before, after} {
		x := refresh(t, s)
		if _, ok := findExited(x.ExitedProcesses, c.pid, 0); !ok {
			t.Errorf("the exited process (a zombie, its threads gone) is not reported exited")
		}
		if _, ok := findTask(x.Processes, c.pid, 0); ok {
			t.Errorf("the exited process is reported alive")
		}
	}
}

// TestExecFromOtherThread: a thread other than the main one calls exec, and
// the kernel gives it the main thread's id. The process lives on; the old
// main thread and the thread that called exec are reported exited; no
// thread shows more than one CPU over the interval, and the threads' Deltas
// add up to the growth of the process's CPU clock (read directly).
func TestExecFromOtherThread(t *testing.T) {
	t.Parallel()
	c := startChild(t, "threadexec 0 300")
	var execer int
	if _, err := fmt.Sscanf(c.line(t), "spun %d", &execer); err != nil || execer == c.pid {
		t.Fatalf("workload: thread %d (process %d): %v", execer, c.pid, err)
	}
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := refresh(t, s)
	c0 := processClock(t, c.pid)
	if _, ok := findTask(x.Threads, c.pid, execer); !ok {
		t.Fatalf("thread %d missing before the exec", execer)
	}

	fmt.Fprintln(c.stdin)
	var tid int
	if _, err := fmt.Sscanf(c.line(t), "ready %d", &tid); err != nil {
		t.Fatalf("the new image did not start: %v", err)
	}
	waitFor(t, "the old threads to go", func() bool { return !slicesContains(taskIDs(c.pid), fmt.Sprint(execer)) })
	x = refresh(t, s)
	c1 := processClock(t, c.pid)

	if _, ok := findExited(x.ExitedProcesses, c.pid, 0); ok {
		t.Errorf("the process reported exited at its exec")
	}
	p, ok := findTask(x.Processes, c.pid, 0)
	if !ok {
		t.Fatalf("the process is missing after its exec")
	}
	for _, id := range []int{c.pid, execer} {
		if _, ok := findExited(x.ExitedThreads, c.pid, id); !ok {
			t.Errorf("thread %d is not reported exited at the exec", id)
		}
	}
	m, ok := findTask(x.Threads, c.pid, c.pid)
	if !ok {
		t.Fatalf("no live thread %d after the exec", c.pid)
	}
	if !m.New {
		t.Errorf("thread %d after the exec is not New: a new task has its id", c.pid)
	}
	var sum time.Duration
	for _, th := range x.Threads {
		if th.Delta > x.Interval+10*time.Millisecond {
			t.Errorf("thread %d: Delta %v over an interval of %v: more than one CPU", th.TID, th.Delta, x.Interval)
		}
		sum += th.Delta
	}
	for _, e := range x.ExitedThreads {
		sum += e.Delta
	}
	// Each running thread's schedstat lags by up to a tick (10 ms at
	// HZ=100) at either end; the old threads' last instants before they
	// went are in the clock, not in any thread.
	grew := c1 - c0
	if d := sum - grew; d > 20*time.Millisecond+grew/10 || -d > 20*time.Millisecond+grew/10 {
		t.Errorf("the threads' Deltas add up to %v, the process's CPU clock grew %v (process Delta %v)", sum, grew, p.Delta)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestReusedPidOverBudget: with no descriptor to spare for it, a process is
// read by name; the kernel hands its pid to a new process started within
// the same clock tick (root: /proc/sys/kernel/ns_last_pid), so the pair
// (pid, start tick) is the same. The sampler reports the first exited and
// the second new, with none of the first's times.
func TestReusedPidOverBudget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write /proc/sys/kernel/ns_last_pid")
	}
	startTick := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return ""
		}
		return strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])[19]
	}
	tries, reused := 0, 0
	for tries < 50 && reused < 3 {
		tries++
		a := workload.Command("idle 0")
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		pid := a.Process.Pid
		s, err := sampler.New(sampler.Options{PIDs: []int{pid}, MaxFiles: 2})
		if err != nil {
			t.Fatal(err)
		}
		x := refresh(t, s)
		old, ok := findTask(x.Processes, pid, 0)
		tick := startTick(pid)
		a.Process.Kill()
		a.Wait()
		if st := s.Stats(); st.Files > 2 {
			t.Fatalf("stats %+v: the budget of 2 kept a file for the process", st)
		}
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("writing ns_last_pid: %v", err)
		}
		b := workload.Command("idle 0")
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		same := ok && b.Process.Pid == pid && startTick(pid) == tick
		if !same {
			b.Process.Kill()
			b.Wait()
			s.Close()
			continue
		}
		reused++
		y := refresh(t, s)
		b.Process.Kill()
		b.Wait()
		s.Close()
		if _, ok := findExited(y.ExitedProcesses, pid, 0); !ok {
			t.Errorf("the first process (total %v) is not reported exited when its pid names another in the same tick", old.Times.Total())
		}
		if n, ok := findTask(y.Processes, pid, 0); ok && (!n.New || n.Delta != n.Times.Total()) {
			t.Errorf("the second process (total %v, Delta %v, New %v) carries the first's entry (total %v)", n.Times.Total(), n.Delta, n.New, old.Times.Total())
		}
	}
	// A busy machine may never start the second process within the
	// first's tick: that is not a skip (nothing to install) nor a failure,
	// and the result says so.
	if reused == 0 {
		t.Logf("no pid reused within one clock tick in %d tries: the machine was too busy to start the second process in the first's tick, and nothing was checked", tries)
		return
	}
	t.Logf("%d pids reused within the tick in %d tries", reused, tries)
}

// deniedEnv makes the test binary deniedChild: "ROOT PID", a proc mount and
// a process of another user in it.
const deniedEnv = "SAMPLER_DENIED"

// deniedChild runs as an unprivileged user over a hidepid=1 proc mount:
// every other user's process is listed but may not be read. It prints what
// a sampler of every process and one of PID alone make of it.
func deniedChild() {
	var root string
	var pid int
	fmt.Sscan(os.Getenv(deniedEnv), &root, &pid)
	eng := engine.New(engine.Config{ProcRoot: root})
	all, err := sampler.NewWithEngine(sampler.Options{}, eng)
	if err != nil {
		fmt.Println("new:", err)
		os.Exit(1)
	}
	for i := range 2 {
		x, err := all.Refresh()
		if err != nil {
			fmt.Println("refresh:", err)
			os.Exit(1)
		}
		var cpu time.Duration = -1
		for _, d := range x.Denied {
			if d.PID == pid {
				cpu = d.Times.Total()
			}
		}
		fmt.Printf("all %d: processes %d denied %d errors %d pid %d cpu %d\n", i, len(x.Processes), len(x.Denied), len(x.Errors), pid, cpu)
	}
	one, err := sampler.NewWithEngine(sampler.Options{PIDs: []int{pid}}, eng)
	if err != nil {
		fmt.Println("new:", err)
		os.Exit(1)
	}
	x, err := one.Refresh()
	if err != nil {
		fmt.Println("refresh:", err)
		os.Exit(1)
	}
	denied := 0
	for _, err := range x.Errors {
		if errors.Is(err, cputime.ErrAccessDenied) {
			denied++
		}
	}
	fmt.Printf("named: denied %d errors %d access-denied errors %d\n", len(x.Denied), len(x.Errors), denied)
	os.Exit(0)
}

// TestAccessDenied: an unprivileged user samples every process over a
// proc mount with hidepid=1 (root mounts it): root's processes are listed
// but their files refuse. Each is in Sample.Denied with the CPU its
// process clock gives (at least what the process's own clock said
// before), never silently absent; an error only where the caller named
// the pid.
func TestAccessDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a hidepid=1 proc and run as nobody")
	}
	dir, err := os.MkdirTemp("", "sampler-denied")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	mnt, bin := dir+"/proc", dir+"/sampler.test"
	os.Chmod(dir, 0o755) // for nobody to run bin
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", mnt, "proc", 0, "hidepid=1"); err != nil {
		t.Skipf("mounting proc with hidepid=1: %v", err)
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	exe, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "spin 0") // root's, spinning
	c.line(t)
	before := processClock(t, c.pid)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", deniedEnv, mnt, c.pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	t.Logf("child as nobody:\n%s", out)
	for l := range strings.Lines(string(out)) {
		var i, procs, denied, errs, pid int
		var cpu int64
		if n, _ := fmt.Sscanf(l, "all %d: processes %d denied %d errors %d pid %d cpu %d", &i, &procs, &denied, &errs, &pid, &cpu); n == 6 {
			if cpu < int64(before) {
				t.Errorf("refresh %d: the spinning process of root is not in Denied with its CPU (%v, its clock said %v before): %s", i, time.Duration(cpu), before, l)
			}
			if errs != 0 {
				t.Errorf("refresh %d of every process: %d errors for processes nobody named", i, errs)
			}
			continue
		}
		var d, e, ad int
		if n, _ := fmt.Sscanf(l, "named: denied %d errors %d access-denied errors %d", &d, &e, &ad); n == 3 {
			if d != 1 || ad != 1 {
				t.Errorf("the named process: %d denied, %d access-denied errors, want 1 and 1: %s", d, ad, l)
			}
			continue
		}
		t.Errorf("child: %s", l)
	}
}

// TestReusedTidOverBudget: the thread version of TestReusedPidOverBudget.
// With two descriptors, every thread is read by name; a thread exits and
// the kernel hands its tid to a new thread of the same process started
// within the same clock tick (root: ns_last_pid). The sampler reports the
// first exited and the second new, with none of the first's times.
func TestReusedTidOverBudget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write /proc/sys/kernel/ns_last_pid")
	}
	c := startChild(t, "tids 0")
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refresh(t, s)
	startTick := func(tid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", c.pid, tid))
		if err != nil {
			return ""
		}
		return strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])[19]
	}
	newThread := func() int {
		fmt.Fprintln(c.stdin, "new")
		var tid int
		if _, err := fmt.Sscanf(c.line(t), "tid %d", &tid); err != nil {
			t.Fatal(err)
		}
		return tid
	}
	endThread := func(tid int) {
		fmt.Fprintln(c.stdin, "end", tid)
		if l := c.line(t); l != "ended" {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", c.pid, tid))
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", c.pid, tid))
			t.Fatalf("thread %d did not exit: %s\n%s\n%s", tid, l, b, st)
		}
	}
	tries, reused := 0, 0
	for tries < 100 && reused < 3 {
		tries++
		a := newThread()
		x := refresh(t, s)
		old, ok := findTask(x.Threads, c.pid, a)
		tick := startTick(a)
		endThread(a)
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(a-1)), 0); err != nil {
			t.Skipf("writing ns_last_pid: %v", err)
		}
		b := newThread()
		if !ok || b != a || startTick(b) != tick {
			endThread(b)
			refresh(t, s)
			continue
		}
		reused++
		y := refresh(t, s)
		if _, ok := findExited(y.ExitedThreads, c.pid, a); !ok {
			t.Errorf("thread %d (total %v) is not reported exited when its tid names another in the same tick", a, old.Times.Total())
		}
		if n, ok := findTask(y.Threads, c.pid, a); ok && (!n.New || n.Delta != n.Times.Total()) {
			t.Errorf("the second thread %d (total %v, Delta %v, New %v) carries the first's entry (total %v)", a, n.Times.Total(), n.Delta, n.New, old.Times.Total())
		}
		endThread(b)
		refresh(t, s)
	}
	if st := s.Stats(); st.Files > 2 {
		t.Errorf("stats %+v: the budget of 2 kept a file for a thread", st)
	}
	if reused == 0 {
		// Not a skip (nothing to install) nor a failure: the result says so.
		t.Logf("no tid reused within one clock tick in %d tries: the runtime reused its threads, or the machine was too busy to create the second in the first's tick, and nothing was checked", tries)
		return
	}
	t.Logf("%d tids reused within the tick in %d tries", reused, tries)
}
