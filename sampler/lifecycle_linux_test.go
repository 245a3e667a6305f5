package sampler_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
			if _, ok := findTask(x.Threads, c.pid, c.pid); ok {
				t.Errorf("refresh %d of %s: the zombie main thread is reported alive", i, who)
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
