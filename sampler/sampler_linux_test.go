package sampler_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/sampler"
)

func TestMain(m *testing.M) {
	workload.Main()
	if os.Getenv(budgetEnv) != "" {
		budgetChild()
		return
	}
	if os.Getenv(deniedEnv) != "" {
		deniedChild()
		return
	}
	os.Exit(m.Run())
}

// child is a running workload.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	pid   int
}

func startChild(t *testing.T, mode string) *child {
	t.Helper()
	cmd := workload.Command(mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), pid: cmd.Process.Pid}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

func (c *child) line(t *testing.T) string {
	t.Helper()
	if !c.out.Scan() {
		t.Fatalf("workload %d ended early: %v", c.pid, c.out.Err())
	}
	return c.out.Text()
}

func refresh(t *testing.T, s *sampler.Sampler) *sampler.Sample {
	t.Helper()
	x, err := s.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range x.Errors {
		t.Errorf("refresh: %v", err)
	}
	return x
}

func findTask(tasks []sampler.Task, pid, tid int) (sampler.Task, bool) {
	for _, t := range tasks {
		if t.PID == pid && t.TID == tid {
			return t, true
		}
	}
	return sampler.Task{}, false
}

func findExited(tasks []sampler.Exited, pid, tid int) (sampler.Exited, bool) {
	for _, t := range tasks {
		if t.PID == pid && t.TID == tid {
			return t, true
		}
	}
	return sampler.Exited{}, false
}

// statFields reads /proc/pid/task/tid/stat directly (independently of the
// package's parser): the fields after the command name, numbered as in
// proc(5) from 3 (state).
func statFields(t *testing.T, pid, tid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return append([]string{"", "", ""}, strings.Fields(s[strings.LastIndexByte(s, ')')+1:])...)
}

func field(t *testing.T, f []string, i int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(f[i], 10, 64)
	if err != nil {
		t.Fatalf("stat field %d: %v", i, err)
	}
	return v
}

func schedstatRuntime(t *testing.T, pid, tid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const hz = 100 // USER_HZ on every Linux architecture Go runs on

// TestSpinningChild: a child's thread burns a known amount of CPU (its own
// thread clock says how much) between two refreshes; the sampler's Delta
// for that thread and for the process agree with it, and the idle threads
// show none.
func TestSpinningChild(t *testing.T) {
	t.Parallel()
	c := startChild(t, "burn 20 300")
	c.line(t) // ready
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := refresh(t, s)
	if !first.First || len(first.Processes) != 1 || len(first.Threads) < 21 {
		t.Fatalf("first refresh: first=%v, %d processes, %d threads; want 1 and at least 21 threads",
			first.First, len(first.Processes), len(first.Threads))
	}
	fmt.Fprintln(c.stdin, "burn")
	var tid int
	var from, to time.Duration
	fmt.Sscan(c.line(t), &tid, &from, &to)
	burnt := to - from
	second := refresh(t, s)
	th, ok := findTask(second.Threads, c.pid, tid)
	if !ok {
		t.Fatalf("spinning thread %d not in the second refresh", tid)
	}
	// The thread's own clock, read a moment before it blocked: its total
	// is at least that (and the run until it blocked, microseconds), and
	// its Delta at least what it burnt (all of its time if the Go runtime
	// started the thread for it: then it is New).
	if th.Times.Total() < to || th.Times.Total() > to+20*time.Millisecond {
		t.Errorf("thread %d: total %v, its own clock said %v", tid, th.Times.Total(), to)
	}
	if th.Delta < burnt || th.Delta > th.Times.Total() {
		t.Errorf("thread %d: Delta %v, it burnt %v of its total %v", tid, th.Delta, burnt, th.Times.Total())
	}
	if th.New && th.Delta != th.Times.Total() {
		t.Errorf("new thread: total %v != Delta %v", th.Times.Total(), th.Delta)
	}
	p, ok := findTask(second.Processes, c.pid, 0)
	if !ok {
		t.Fatal("process missing")
	}
	if p.Delta < burnt || p.Delta > burnt+50*time.Millisecond {
		t.Errorf("process Delta %v, the burning thread alone used %v", p.Delta, burnt)
	}
	idle := 0
	for _, x := range second.Threads {
		if x.Delta == 0 {
			idle++
		}
	}
	if idle < 15 {
		t.Errorf("only %d threads with zero Delta; the workload has 20 idle ones", idle)
	}
	// Every thread /proc lists now is in the sample (none can have come
	// or gone since: the workload is idle between lines).
	sameThreads(t, second, c.pid)
	// The exact interval bounds %CPU: one thread can use at most one CPU.
	if th.Delta > second.Interval+10*time.Millisecond {
		t.Errorf("Delta %v exceeds the interval %v", th.Delta, second.Interval)
	}
	t.Logf("burnt %v by its clock; sampler: thread Delta %v, process Delta %v, interval %v", burnt, th.Delta, p.Delta, second.Interval)
}

// TestAgainstProc stops a child (SIGSTOP: its times cannot move) and
// compares every thread with /proc read directly: the total is the
// schedstat run time to the nanosecond, the split is the stat file's
// utime:stime ratio, the creation is the start tick's beginning.
func TestAgainstProc(t *testing.T) {
	t.Parallel()
	c := startChild(t, "burn 5 50")
	c.line(t)
	fmt.Fprintln(c.stdin, "burn")
	c.line(t)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer c.cmd.Process.Signal(syscall.SIGCONT)
	waitStopped(t, c.pid)
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := refresh(t, s)
	if len(x.Threads) < 6 {
		t.Fatalf("%d threads, want at least 6", len(x.Threads))
	}
	var sum time.Duration
	for _, th := range x.Threads {
		f := statFields(t, c.pid, th.TID)
		rt := schedstatRuntime(t, c.pid, th.TID)
		if th.Times.Total() != time.Duration(rt) {
			t.Errorf("thread %d: total %v, schedstat %d ns", th.TID, th.Times.Total(), rt)
		}
		utime, stime := field(t, f, 14), field(t, f, 15)
		if utime+stime > 0 {
			wantKernel := time.Duration(float64(rt) * float64(stime) / float64(utime+stime))
			if d := th.Times.Kernel - wantKernel; d > 1 || d < -1 {
				t.Errorf("thread %d: kernel %v, stat's ratio %d:%d of %d ns gives %v", th.TID, th.Times.Kernel, utime, stime, rt, wantKernel)
			}
		}
		start := field(t, f, 22)
		if f[3] != string(th.State) {
			t.Errorf("thread %d: state %q, /proc says %q", th.TID, th.State, f[3])
		}
		checkCreation(t, th.TID, th.Times.Creation, start)
		sum += th.Times.Total()
	}
	p, _ := findTask(x.Processes, c.pid, 0)
	// The process clock counts the threads that exited too: at least the sum.
	if p.Times.Total() < sum {
		t.Errorf("process total %v below its threads' sum %v", p.Times.Total(), sum)
	}
	// The process's own stat: utime + stime in whole ticks, each thread's
	// truncated (the exact total is above by less than a tick per thread).
	pf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.pid))
	if err != nil {
		t.Fatal(err)
	}
	ps := strings.Fields(string(pf)[strings.LastIndexByte(string(pf), ')')+1:])
	ut, _ := strconv.ParseUint(ps[11], 10, 64)
	st, _ := strconv.ParseUint(ps[12], 10, 64)
	ticks := time.Duration((ut + st) * uint64(time.Second) / hz)
	if d := p.Times.Total() - ticks; d < -2*time.Second/hz || d > 2*time.Second/hz*time.Duration(len(x.Threads)) {
		t.Errorf("process total %v vs /proc/PID/stat utime+stime %v", p.Times.Total(), ticks)
	}
	// Stopped: a second refresh reads the same, and nothing moved.
	y := refresh(t, s)
	for _, th := range y.Threads {
		if th.Delta != 0 {
			t.Errorf("stopped thread %d moved by %v", th.TID, th.Delta)
		}
	}
}

func checkCreation(t *testing.T, id int, got time.Time, startTicks uint64) {
	t.Helper()
	offset := workload.BootOffset()
	want := time.Unix(0, offset+int64(startTicks)*int64(time.Second/hz))
	d := got.Sub(want)
	if d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("task %d: creation %v, /proc start %d ticks gives %v", id, got, startTicks, want)
	}
}

func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatal(err)
		}
		stopped := 0
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			if statFields(t, pid, tid)[3] == "T" {
				stopped++
			}
		}
		if stopped == len(ents) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("process %d did not stop", pid)
}

// TestExitBracket: a child that exits between two refreshes appears in
// ExitedProcesses once, with a bracket that contains its exit (after we
// closed its stdin, before Wait returned), and an exit instant from its
// pidfd inside it.
func TestExitBracket(t *testing.T) {
	t.Parallel()
	for _, reap := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaped=%v", reap), func(t *testing.T) {
			c := startChild(t, "idle 3")
			c.line(t)
			s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			refresh(t, s)
			before := refresh(t, s)
			if len(before.Processes) != 1 {
				t.Fatalf("%d processes", len(before.Processes))
			}
			tClose := time.Now()
			c.stdin.Close()
			var tWait time.Time
			if reap {
				c.cmd.Wait()
				tWait = time.Now()
			} else {
				// Not reaped: a zombie, read with its final times.
				var si unix.Siginfo
				if err := unix.Waitid(unix.P_PID, c.pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
					t.Fatal(err)
				}
				tWait = time.Now()
			}
			x := refresh(t, s)
			if len(x.Processes) != 0 {
				t.Errorf("exited process still listed: %+v", x.Processes)
			}
			e, ok := findExited(x.ExitedProcesses, c.pid, 0)
			if !ok {
				t.Fatalf("exited process not reported: %+v", x.ExitedProcesses)
			}
			if e.LastSeen.After(tClose) || e.GoneAt.Before(tWait) || e.LastSeen.After(e.GoneAt) {
				t.Errorf("bracket [%v, %v] does not contain the exit, in [%v, %v]", e.LastSeen, e.GoneAt, tClose, tWait)
			}
			if !e.Times.Exit.IsZero() && (e.Times.Exit.Before(tClose) || e.Times.Exit.After(tWait.Add(time.Millisecond))) {
				t.Errorf("exit instant %v outside [%v, %v]", e.Times.Exit, tClose, tWait)
			}
			if e.Times.Exit.IsZero() {
				t.Logf("no exit instant (no pidfd?)")
			} else if e.Times.ExitSource != cputime.ExitObserved {
				t.Errorf("exit instant from a pidfd has source %v", e.Times.ExitSource)
			}
			p, _ := findTask(before.Processes, c.pid, 0)
			if e.Times.Total() < p.Times.Total() {
				t.Errorf("exited with %v, less than last seen %v", e.Times.Total(), p.Times.Total())
			}
			if n := len(x.ExitedThreads); n < 4 {
				t.Errorf("%d exited threads, want the workload's 4 or more", n)
			}
			if !reap {
				// The final times of a zombie are what its parent reaps.
				var ru unix.Rusage
				var ws unix.WaitStatus
				if _, err := unix.Wait4(c.pid, &ws, 0, &ru); err != nil {
					t.Fatal(err)
				}
				rus := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				if d := e.Times.Total() - rus; d > 5*time.Millisecond || d < -5*time.Millisecond {
					t.Errorf("zombie's final total %v, its rusage %v", e.Times.Total(), rus)
				}
			}
			// Reported once.
			y := refresh(t, s)
			if len(y.ExitedProcesses)+len(y.Processes) != 0 {
				t.Errorf("after the exit: %d processes, %d exited; want none", len(y.Processes), len(y.ExitedProcesses))
			}
		})
	}
}

// TestThreadExit: a thread of ours that ends between refreshes is in
// ExitedThreads, bracketed.
func TestThreadExit(t *testing.T) {
	t.Parallel()
	tidc, stop, done := make(chan int), make(chan struct{}), make(chan struct{})
	var tid int
	for {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			tidc <- unix.Gettid()
			<-stop
			close(done)
		}()
		// The main thread is never ended by the runtime: use another.
		if tid = <-tidc; tid != os.Getpid() {
			break
		}
		close(stop)
		<-done
		stop, done = make(chan struct{}), make(chan struct{})
	}
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := refresh(t, s)
	if _, ok := findTask(x.Threads, os.Getpid(), tid); !ok {
		t.Fatalf("thread %d missing", tid)
	}
	tStop := time.Now()
	close(stop)
	<-done
	for range 1000 {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	tGone := time.Now()
	y := refresh(t, s)
	e, ok := findExited(y.ExitedThreads, os.Getpid(), tid)
	if !ok {
		t.Fatalf("thread %d not in ExitedThreads", tid)
	}
	if e.LastSeen.After(tStop) || e.GoneAt.Before(tGone) {
		t.Errorf("bracket [%v, %v] misses the exit in [%v, %v]", e.LastSeen, e.GoneAt, tStop, tGone)
	}
	if _, ok := findTask(y.Threads, os.Getpid(), tid); ok {
		t.Errorf("exited thread %d still listed", tid)
	}
}

// TestThreadsUnderChurn samples this process's threads while others are
// created and end without pause (workload.ChurnThreads): a thread that
// stays is in every sample and never reported exited, though the kernel's
// listing of the task directory can leave it out.
func TestThreadsUnderChurn(t *testing.T) {
	workload.ChurnThreads(t, 4)
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var staying []int
	for i := range 200 {
		if i%10 == 0 {
			staying = append(staying, workload.StayingThread(t))
		}
		x := refresh(t, s)
		for _, tid := range staying {
			if _, ok := findExited(x.ExitedThreads, os.Getpid(), tid); ok {
				t.Fatalf("sample %d: thread %d, alive throughout, reported exited", i, tid)
			}
			if _, ok := findTask(x.Threads, os.Getpid(), tid); !ok {
				t.Fatalf("sample %d: thread %d, alive throughout, missing", i, tid)
			}
		}
	}
}

// TestOwnThreadsExact: our own threads are read from their thread CPU
// clocks; a thread that burns CPU between refreshes shows it to within the
// time the refresh itself takes.
func TestOwnThreadsExact(t *testing.T) {
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	refresh(t, s)
	var ru0, ru1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru0)
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &ru1)
	x := refresh(t, s)
	th, ok := findTask(x.Threads, os.Getpid(), tid)
	if !ok {
		t.Fatal("own thread missing")
	}
	spun := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	if th.Delta < spun-time.Millisecond || th.Delta > spun+20*time.Millisecond {
		t.Errorf("Delta %v; getrusage(RUSAGE_THREAD) says %v", th.Delta, spun)
	}
}

// TestReusedPid makes the kernel hand a dead child's pid to a new child
// (root: /proc/sys/kernel/ns_last_pid); the sampler reports the first
// exited and the second as a new entry with none of the first's state.
func TestReusedPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write /proc/sys/kernel/ns_last_pid")
	}
	a := startChild(t, "burn 0 100")
	a.line(t)
	fmt.Fprintln(a.stdin, "burn")
	a.line(t)
	pid := a.pid
	s, err := sampler.New(sampler.Options{PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := refresh(t, s)
	old, ok := findTask(x.Processes, pid, 0)
	if !ok {
		t.Fatal("first child missing")
	}
	a.stdin.Close()
	a.cmd.Wait()
	var b *child
	for range 20 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("writing ns_last_pid: %v", err)
		}
		b = startChild(t, "idle 0")
		if b.pid == pid {
			break
		}
		b.stdin.Close()
		b.cmd.Wait()
		b = nil
	}
	if b == nil {
		t.Skip("another process took the pid each time (a busy machine)")
	}
	b.line(t)
	y := refresh(t, s)
	e, ok := findExited(y.ExitedProcesses, pid, 0)
	if !ok || !e.Times.Creation.Equal(old.Times.Creation) {
		t.Errorf("the first child is not reported exited: %+v", y.ExitedProcesses)
	}
	n, ok := findTask(y.Processes, pid, 0)
	if !ok {
		t.Fatal("the second child is missing")
	}
	if !n.New {
		t.Error("the second child, with the reused pid, is not New")
	}
	if n.Times.Total() >= old.Times.Total() || n.Delta != n.Times.Total() {
		t.Errorf("the second child (total %v, Delta %v) carries the first's state (total %v)", n.Times.Total(), n.Delta, old.Times.Total())
	}
	checkCreation(t, pid, n.Times.Creation, field(t, statFields(t, pid, pid), 22))
}

// TestReadsPerThread: in steady state an idle thread costs one read.
func TestReadsPerThread(t *testing.T) {
	t.Parallel()
	c := startChild(t, "idle 500")
	c.line(t)
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refresh(t, s)
	x := refresh(t, s)
	st := s.Stats()
	per := float64(st.Reads) / float64(len(x.Threads))
	t.Logf("%d threads: %d reads (%.3f per thread), %d getdents, %d descriptors", len(x.Threads), st.Reads, per, st.Scans, st.Files)
	if per > 1.3 {
		t.Errorf("%.3f reads per idle thread, want at most 1.3", per)
	}
	if want := 500; len(x.Threads) < want {
		t.Errorf("%d threads, want at least %d", len(x.Threads), want)
	}
}

// TestNameFilter: Match keeps only the processes it accepts.
func TestNameFilter(t *testing.T) {
	t.Parallel()
	c := startChild(t, "idle 1")
	c.line(t)
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.pid))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(comm))
	s, err := sampler.New(sampler.Options{Match: func(n string) bool { return n == want }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := refresh(t, s)
	found := false
	for _, p := range x.Processes {
		if p.Name != want {
			t.Errorf("process %d %q passed the filter for %q", p.PID, p.Name, want)
		}
		found = found || p.PID == c.pid
	}
	if !found {
		t.Errorf("child %d (%q) not found", c.pid, want)
	}
}

// TestAllProcesses: without options, every process /proc lists (that
// lives through the refresh) is there, and our own process's Times agree
// with the root package's.
func TestAllProcesses(t *testing.T) {
	s, err := sampler.New(sampler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The processes /proc lists, not as zombies, both before and after
	// the refresh lived through it. Other packages' tests start and end
	// processes meanwhile, and leave zombies, which the sampler reports
	// as exited rather than listing.
	pids := func() map[int]bool {
		ents, _ := os.ReadDir("/proc")
		m := map[int]bool{}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			if st, err := procfs.ParseStat(b); err != nil || st.State == 'Z' || st.State == 'X' {
				continue
			}
			m[pid] = true
		}
		return m
	}
	before := pids()
	x := refresh(t, s)
	after := pids()
	seen := map[int]bool{}
	for _, p := range x.Processes {
		seen[p.PID] = true
	}
	n, missing := 0, 0
	for pid := range before {
		if after[pid] {
			n++
			if !seen[pid] {
				missing++
			}
		}
	}
	if missing > n/10 {
		t.Errorf("%d of the %d processes /proc lists before and after the refresh are missing", missing, n)
	}
	me, ok := findTask(x.Processes, os.Getpid(), 0)
	if !ok {
		t.Fatal("own process missing")
	}
	info, err := cputime.ProcessInfoOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !me.Times.Creation.Equal(info.Times.Creation) {
		t.Errorf("creation %v, root package says %v", me.Times.Creation, info.Times.Creation)
	}
	if me.Times.Total() > info.Times.Total() {
		t.Errorf("total %v after the root package's later %v", me.Times.Total(), info.Times.Total())
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Refresh(); !errors.Is(err, sampler.ErrClosed) {
		t.Errorf("Refresh after Close: %v, want ErrClosed", err)
	}
	if _, err := sampler.New(sampler.Options{PIDs: []int{0}}); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("pid 0: %v, want ErrInvalidArgument", err)
	}
}

// The descriptor budget, in a subprocess that sets its RLIMIT_NOFILE to
// 200 (soft and hard): its 400 threads need more than that; the sampler
// degrades and still reports every one, each as /proc has it.
const budgetEnv = "SAMPLER_BUDGET_CHILD"

func TestBudget(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), budgetEnv+"=1")
	cmd.Env = append(cmd.Env, "SAMPLER_NOFILE=200")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("budget child: %v", err)
	}
}

func budgetChild() {
	n, _ := strconv.ParseUint(os.Getenv("SAMPLER_NOFILE"), 10, 64)
	lim := unix.Rlimit{Cur: n, Max: n}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	ready := make(chan int)
	for range 400 {
		go func() {
			runtime.LockOSThread()
			ready <- 0
			select {}
		}()
	}
	for range 400 {
		<-ready
	}
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}, Threads: true})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fail := false
	for i := range 3 {
		// Every thread listed before the refresh and still there after it
		// is in it (the runtime may start threads meanwhile).
		before, _ := os.ReadDir("/proc/self/task")
		x, err := s.Refresh()
		if err != nil {
			fmt.Println("refresh:", err)
			os.Exit(1)
		}
		for _, err := range x.Errors {
			fmt.Println("error:", err)
			fail = true
		}
		ents, _ := os.ReadDir("/proc/self/task")
		fds, _ := os.ReadDir("/proc/self/fd")
		st := s.Stats()
		fmt.Printf("refresh %d: %d threads (/proc/self/task: %d), stats %+v, open fds %d of %d\n", i, len(x.Threads), len(ents), st, len(fds), n)
		got := map[string]bool{}
		for _, th := range x.Threads {
			got[strconv.Itoa(th.TID)] = true
		}
		missing := 0
		for _, e := range before {
			if _, err := os.Stat("/proc/self/task/" + e.Name()); err == nil && !got[e.Name()] {
				missing++
			}
		}
		if len(x.Threads) < 400 || missing > 0 {
			fmt.Println("threads missing:", missing)
			fail = true
		}
		if st.Files > st.Budget || st.Budget > int(n) || st.Degraded == 0 || len(fds) >= int(n) {
			fmt.Println("budget not kept")
			fail = true
		}
		// Each degraded thread still reads as /proc has it: its creation
		// from its own stat.
		for _, th := range x.Threads {
			b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", th.TID))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+1:])
			start, _ := strconv.ParseUint(f[19], 10, 64)
			want := time.Unix(0, workload.BootOffset()+int64(start)*1e7)
			d := th.Times.Creation.Sub(want)
			if d > time.Millisecond || d < -time.Millisecond {
				fmt.Println("creation", th.TID, th.Times.Creation, want)
				fail = true
			}
		}
	}
	// The caller takes every descriptor left but five: a new sampler's
	// budget (from the limit) is more than there is, and opens fail with
	// EMFILE; it must still read every thread, by name.
	var held []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		held = append(held, fd)
	}
	for _, fd := range held[len(held)-5:] {
		unix.Close(fd)
	}
	s2, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}, Threads: true})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for i := range 2 {
		x, err := s2.Refresh()
		if err != nil {
			fmt.Println("refresh with no descriptors left:", err)
			os.Exit(1)
		}
		for _, err := range x.Errors {
			fmt.Println("error with no descriptors left:", err)
			fail = true
		}
		fmt.Printf("no descriptors left, refresh %d: %d threads, stats %+v\n", i, len(x.Threads), s2.Stats())
		if len(x.Threads) < 400 {
			fmt.Println("threads missing")
			fail = true
		}
	}
	if fail {
		os.Exit(1)
	}
	os.Exit(0)
}

// sameThreads checks that x holds exactly the threads /proc lists for pid.
func sameThreads(t *testing.T, x *sampler.Sample, pid int) {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		want[tid] = true
	}
	// The Go runtime starts and ends threads at will: a thread the sample
	// lacks must have started after the refresh began (within the tick
	// its start is rounded to); one it has that /proc lacks has exited.
	got := map[int]bool{}
	for _, th := range x.Threads {
		if th.PID == pid {
			got[th.TID] = true
		}
	}
	for tid := range want {
		if got[tid] {
			continue
		}
		start := time.Unix(0, workload.BootOffset()+int64(field(t, statFields(t, pid, tid), 22))*int64(time.Second/hz))
		if start.Before(x.Time.Add(-time.Second / hz)) {
			t.Errorf("thread %d of /proc/%d/task, started %v before the refresh at %v, missing", tid, pid, x.Time.Sub(start), x.Time)
		}
	}
}

// TestSyscallsPerRefresh counts, with strace -c -f (an independent
// witness), the system calls of refreshing a 1,000-thread process: it runs
// this test binary as a sampler of the workload twice under strace, with 2
// and with 52 refreshes, and divides the difference by 50.
func TestSyscallsPerRefresh(t *testing.T) {
	if os.Getenv(straceEnv) != "" {
		straceTarget(t)
		return
	}
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not found: install with apt-get install strace")
	}
	c := startChild(t, "idle 1000")
	c.line(t)
	count := func(n int) (calls map[string]int) {
		out := t.TempDir() + "/strace"
		cmd := exec.Command("strace", "-f", "-c", "-o", out, os.Args[0], "-test.run=^TestSyscallsPerRefresh$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d", straceEnv, c.pid, n))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("strace: %v\n%s", err, b) // ptrace forbidden here
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		calls = map[string]int{}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || strings.HasPrefix(line, "%") || strings.HasPrefix(line, "-") {
				continue
			}
			n, err := strconv.Atoi(f[3])
			if err != nil {
				continue
			}
			calls[f[len(f)-1]] += n
		}
		return calls
	}
	base, many := count(2), count(52)
	// The Go runtime's own calls (sysmon's nanosleep, futex wakeups,
	// signal returns) depend on how long the run takes, which ptrace
	// stretches: counted apart.
	runtimeCalls := map[string]bool{"nanosleep": true, "futex": true, "rt_sigreturn": true, "sched_yield": true,
		"epoll_pwait": true, "getpid": true, "tgkill": true, "rt_sigprocmask": true, "mmap": true, "madvise": true}
	total, rt := 0, 0
	var parts []string
	for name, n := range many {
		if name == "total" {
			continue
		}
		if d := n - base[name]; d > 0 {
			if runtimeCalls[name] {
				rt += d
				continue
			}
			total += d
			parts = append(parts, fmt.Sprintf("%s %.2f", name, float64(d)/50))
		}
	}
	slices.Sort(parts)
	per := float64(total) / 50
	t.Logf("1,000 idle threads: %.1f system calls per refresh (%.3f per thread): %s; and %.1f of the Go runtime's",
		per, per/1000, strings.Join(parts, ", "), float64(rt)/50)
	if per > 1.3*1000 {
		t.Errorf("%.0f system calls per refresh of 1,000 idle threads, want at most 1,300", per)
	}
}

const straceEnv = "SAMPLER_STRACE_TARGET"

func straceTarget(t *testing.T) {
	var pid, n int
	fmt.Sscan(os.Getenv(straceEnv), &pid, &n)
	s, err := sampler.New(sampler.Options{PIDs: []int{pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	var x sampler.Sample
	for range n {
		if err := s.RefreshInto(&x); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
}

// TestBudgetTiny: with no descriptor to keep but the sampler's own, every
// thread is still read (by name, under a task directory opened for the
// refresh), with the same values as with descriptors.
func TestBudgetTiny(t *testing.T) {
	t.Parallel()
	c := startChild(t, "idle 10")
	c.line(t)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer c.cmd.Process.Signal(syscall.SIGCONT)
	waitStopped(t, c.pid)
	tiny, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tiny.Close()
	full, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	for range 2 {
		a, b := refresh(t, tiny), refresh(t, full)
		if st := tiny.Stats(); st.Files > 2 || st.Degraded < 10 {
			t.Errorf("stats %+v: want at most 2 files and every thread degraded", st)
		}
		if len(a.Threads) != len(b.Threads) || len(a.Threads) < 11 {
			t.Fatalf("%d threads within the budget, %d without", len(a.Threads), len(b.Threads))
		}
		for i := range a.Threads {
			x, y := a.Threads[i].Times, b.Threads[i].Times
			if x.User != y.User || x.Kernel != y.Kernel {
				t.Errorf("thread %d: %+v within the budget, %+v without", a.Threads[i].TID, x, y)
			}
			checkCreation(t, a.Threads[i].TID, x.Creation, field(t, statFields(t, c.pid, a.Threads[i].TID), 22))
		}
		sameThreads(t, a, c.pid)
	}
}

// TestIdleProcessKeepsThreads: a process none of whose threads has run
// since the last refresh is refreshed from its clock alone (no per-thread
// read), and the moment one of them runs, or a thread is created, the next
// refresh reads them all again: the thread's total is at least what it
// measured of itself, and its Delta at least what it burned.
func TestIdleProcessKeepsThreads(t *testing.T) {
	t.Parallel()
	c := startChild(t, "burn 50 20")
	c.line(t)
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refresh(t, s)
	kept := 0
	for range 20 {
		before := s.Stats().Reads
		x := refresh(t, s)
		if s.Stats().Reads-before < len(x.Threads)/2 {
			kept++
		}
	}
	if kept == 0 {
		t.Errorf("20 refreshes of an idle process of 50 threads each read its threads")
	}
	for i := range 3 {
		fmt.Fprintln(c.stdin)
		var tid int
		var start, end int64
		if _, err := fmt.Sscan(c.line(t), &tid, &start, &end); err != nil {
			t.Fatal(err)
		}
		x := refresh(t, s)
		th, ok := findTask(x.Threads, c.pid, tid)
		if !ok {
			t.Fatalf("burn %d: thread %d not in the refresh", i, tid)
		}
		if th.Times.Total() < time.Duration(end) {
			t.Errorf("burn %d: thread %d total %v, below the %v it measured of itself", i, tid, th.Times.Total(), time.Duration(end))
		}
		if burned := time.Duration(end - start); th.Delta < burned && !th.New {
			t.Errorf("burn %d: thread %d Delta %v, below the %v it burned", i, tid, th.Delta, burned)
		}
	}
}

// TestExitBetweenReads: a process that exits between the sampler's read of
// its CPU clock and its look at the process's state (a hook holds the
// refresh there until the process is a zombie) is reported with its final
// times, the exit's address-space teardown included: what its parent
// reaps (wait4's rusage), not what the clock said before the exit.
func TestExitBetweenReads(t *testing.T) {
	t.Parallel()
	c := startChild(t, "heavy 0 256")
	c.line(t)
	s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refresh(t, s)
	refresh(t, s)
	armed := true
	sampler.SetAfterProcClock(s, func(pid int) {
		if !armed || pid != c.pid {
			return
		}
		armed = false
		c.stdin.Close()
		var si unix.Siginfo
		if err := unix.Waitid(unix.P_PID, c.pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
			t.Errorf("waitid: %v", err)
		}
	})
	x := refresh(t, s)
	if armed {
		t.Fatal("the hook never ran")
	}
	e, ok := findExited(x.ExitedProcesses, c.pid, 0)
	if !ok {
		t.Fatalf("process %d not reported exited: %+v", c.pid, x.ExitedProcesses)
	}
	var ru unix.Rusage
	var ws unix.WaitStatus
	if _, err := unix.Wait4(c.pid, &ws, 0, &ru); err != nil {
		t.Fatal(err)
	}
	rus := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	t.Logf("final total %v, rusage %v", e.Times.Total(), rus)
	// rusage is in microseconds, and its user/kernel split is scaled to
	// the same run time: the totals agree within a few microseconds.
	if d := e.Times.Total() - rus; d > 100*time.Microsecond || d < -100*time.Microsecond {
		t.Errorf("final total %v, rusage %v: off by %v", e.Times.Total(), rus, d)
	}
}

// An exited process read as a zombie is Final, with its exact final times
// (its rusage's, to the µs); one reaped before the refresh is not, and its
// times are the last read, no more than the rusage's.
func TestExitedFinal(t *testing.T) {
	t.Parallel()
	for _, reapFirst := range []bool{false, true} {
		cmd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "count=20000")
		if err := cmd.Start(); err != nil {
			t.Skipf("dd: %v", err)
		}
		pid := cmd.Process.Pid
		s, err := sampler.New(sampler.Options{PIDs: []int{pid}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Refresh(); err != nil {
			t.Fatal(err)
		}
		if reapFirst {
			cmd.Wait()
		} else {
			var info unix.Siginfo
			for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
			}
		}
		smp, err := s.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		cmd.Wait()
		e, ok := findExited(smp.ExitedProcesses, pid, 0)
		if !ok {
			t.Fatalf("reapFirst %v: dd %d not reported exited: %+v", reapFirst, pid, smp)
		}
		ru := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		d := e.Times.Total() - ru // rusage truncated to the µs
		switch {
		case e.Final == reapFirst:
			t.Errorf("reapFirst %v: Final %v", reapFirst, e.Final)
		case e.Final && (d < 0 || d > 2*time.Microsecond):
			t.Errorf("Final, but the total %v against the rusage's %v", e.Times.Total(), ru)
		case !e.Final && d > 2*time.Microsecond:
			t.Errorf("not Final, and the total %v above the rusage's %v", e.Times.Total(), ru)
		}
		t.Logf("reapFirst %v: Final %v, total %v, rusage %v", reapFirst, e.Final, e.Times.Total(), ru)
	}
}
