package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/timeline"
)

// Buffers too small for what the tree writes while the reader is held:
// the kernel drops records, and the recording says so rather than call
// itself complete.
func TestRecordLostFlagged(t *testing.T) {
	test := &testHooks{ringPages: 8, holdDrains: make(chan struct{})}
	r, stop := startOrSkip(t, "threads:2000:0:8", test)
	// Released once the tree has exited: every record written by then.
	exitedNotReaped(t, r.pid)
	close(test.holdDrains)
	_, stats, _, _ := stop()
	// The kernel writes its LOST record only before the next record
	// that fits, which may never come once the tree has exited: the
	// records missing then show as tasks without a creation or exit.
	if stats.Complete() ||
		!hasProblem(stats, "dropped") && !hasProblem(stats, "not seen") {
		t.Errorf("%d-page buffers, reader held: stats %+v", test.ringPages, stats)
	}
}

// A descendant still running when CMD exits: its times are so far, and the
// record says so.
func TestRecordRunningFlagged(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!")
	var out strings.Builder
	cmd.Stdout = &out
	r, err := Start(cmd)
	if err != nil {
		t.Skipf("recording not possible here: %v", err)
	}
	exitedNotReaped(t, cmd.Process.Pid)
	_, st, err := r.Stop()
	cmd.Wait()
	if pid := strings.TrimSpace(out.String()); pid != "" {
		exec.Command("kill", pid).Run()
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Running == 0 || st.Complete() || !hasProblem(st, "still running") {
		t.Errorf("running %d, problems %q", st.Running, st.Problems)
	}
}

// With perf alone (no taskstats: not root), every thread still has its
// final count, and the record owns up to what perf's task clock cannot
// see: time the hypervisor stole during the recording.
func TestRecordThreadExecPerfOnly(t *testing.T) {
	recordThreadExec(t, &testHooks{perfOnly: true})
}

func TestRecordPerfOnly(t *testing.T) {
	_, stop := startOrSkip(t, "threads:100:1:4", &testHooks{perfOnly: true})
	rec, st, _, _ := stop()
	if st.Source != "perf" || st.Incomplete != 0 || st.LostRecords != 0 {
		t.Errorf("stats %+v", st)
	}
	if st.Steal > 0 != hasProblem(st, "hypervisor") {
		t.Errorf("steal %v, problems %q", st.Steal, st.Problems)
	}
	if n := len(rec.Processes[0].Threads); n < 101 {
		t.Errorf("%d threads recorded", n)
	}
}

// A non-main thread execs: the kernel gives it the process's id and ends
// the other threads. The recording has one process, complete: the old
// main thread exited, the thread that exec'd continues under the
// process's id named sh (its life from its own creation), no thread left
// running or without its exit; the threads add up to wait4's figure.
func TestRecordThreadExec(t *testing.T) { recordThreadExec(t, nil) }

func recordThreadExec(t *testing.T, test *testHooks) {
	_, stop := startOrSkip(t, "threadexec", test)
	rec, st, rusage, _ := stop()
	if len(rec.Processes) != 1 {
		t.Fatalf("%d processes", len(rec.Processes))
	}
	p := rec.Processes[0]
	if st.Running != 0 || st.ExitUnseen != 0 || st.Incomplete != 0 {
		t.Errorf("stats %+v", st)
	}
	var sum time.Duration
	leaders := 0
	for _, th := range p.Threads {
		sum += th.User + th.Kernel
		if th.ID == p.ID {
			leaders++
		}
		if th.Exit.IsZero() {
			t.Errorf("thread %d (%s): no exit", th.ID, th.Name)
		}
	}
	if leaders != 2 || p.Name != "sh" {
		t.Errorf("process %q, %d threads with its id (want sh, 2: the old main thread and the one that exec'd)", p.Name, leaders)
	}
	if d := sum - rusage; d > rusage/10+2*time.Millisecond || d < -rusage/10-2*time.Millisecond {
		t.Errorf("threads sum to %v, wait4 %v", sum, rusage)
	}
}

// The same, with the events inherited by the tree's tasks instead of one
// per CPU watching every task: both ways of picking out the tree agree.
func TestRecordThreadExecInherited(t *testing.T) {
	recordThreadExec(t, &testHooks{perTaskOnly: true})
}

// A pid reused within the recording: a child burning 30 ms of its CPU
// clock exits and is reaped, and a later child of the same parent, burning
// 60 ms, gets its pid. The record has both, each with its own life and its
// own final times, neither taken for the other. From taskstats a child's
// total is at least what it burned (its threads' runtimes at their exit
// records, which come after its last look at its clock) and at most
// wait4's (which adds the exit after the records: the address-space
// teardown). From perf's task clock, at most 10% and 1 ms above wait4's,
// unless the record owns up to time the hypervisor stole; and more than
// 1 ms below it only if the record names the shortfall: perf's clock
// stops before that teardown, and on some VMs runs slower than the
// scheduler's, by far more under load.
func TestRecordReusedPID(t *testing.T) { recordReusedPID(t, nil) }

func recordReusedPID(t *testing.T, test *testHooks) {
	// The file's mode lets anyone open it for writing; the write itself
	// needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE. Asked of the
	// capabilities, not tried: a write, even of the value it holds, could
	// undo another package's test steering pids at the same moment.
	if !canSteerPids() {
		t.Skip("steering pids through /proc/sys/kernel/ns_last_pid needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE (root)")
	}
	_, stop := startOrSkip(t, "reusepid", test)
	rec, st, tree, out := stop()
	checkReusedPID(t, rec, st, tree, out)
}

// checkReusedPID checks the record of the helper job reusepid (or
// reusepidwait), which printed out, against the helper's wait4 figures,
// and returns the two processes that had the reused pid.
func checkReusedPID(t *testing.T, rec *timeline.Recording, st Stats, tree time.Duration, out string) []timeline.Process {
	t.Helper()
	// As run does: perf's clock checked against the tree's wait4 total,
	// which names time the hypervisor stole below /proc/stat's 10-ms steps.
	CheckTree(rec, &st, tree)
	// One incomplete: the Go runtime's fork probe (see TestRecordTree).
	if st.Running != 0 || st.ExitUnseen != 0 || st.Incomplete > 1 || st.LostRecords != 0 || st.ExitOnly != 0 {
		t.Errorf("stats %+v", st)
	}
	type child struct {
		pid int
		cpu time.Duration
	}
	var kids []child
	for line := range strings.Lines(out) {
		var c child
		if _, err := fmt.Sscan(line, &c.pid, &c.cpu); err != nil {
			t.Fatalf("helper printed %q: %v", line, err)
		}
		kids = append(kids, c)
	}
	if len(kids) < 2 || kids[0].pid != kids[len(kids)-1].pid {
		t.Fatalf("the helper's children: %+v", kids)
	}
	pid := kids[0].pid
	var same []timeline.Process
	for _, p := range rec.Processes {
		if p.ID == pid {
			same = append(same, p)
		}
	}
	if len(same) != 2 {
		t.Fatalf("%d processes with pid %d, want 2: %+v", len(same), pid, same)
	}
	exact := st.Source == "taskstats"
	stolen := hasProblem(st, "hypervisor")
	for i, p := range same {
		burned, wait4 := 30*time.Millisecond, kids[0].cpu
		if i == 1 {
			burned, wait4 = 60*time.Millisecond, kids[len(kids)-1].cpu
		}
		if p.Parent != rec.Processes[0].ID || p.Exit.IsZero() || !p.Exit.After(p.Creation) {
			t.Errorf("process %d (%d of 2): parent %d, created %v, exited %v", pid, i+1, p.Parent, p.Creation, p.Exit)
		}
		got := total(p)
		switch {
		case exact && (got < burned || got > wait4+100*time.Microsecond):
			t.Errorf("process %d (%d of 2, taskstats): recorded %v, burned %v, wait4 %v", pid, i+1, got, burned, wait4)
		case !exact && !stolen && got-wait4 > wait4/10+time.Millisecond:
			t.Errorf("process %d (%d of 2, perf): recorded %v, wait4 %v", pid, i+1, got, wait4)
		case !exact && wait4-got > time.Millisecond && st.Shortfall == 0:
			// Below its own wait4 by more than the 1 ms a record may be
			// off silently (perf's clock stops early and can run slow):
			// the record must say so.
			t.Errorf("process %d (%d of 2, perf): recorded %v, wait4 %v, and no shortfall named: problems %q", pid, i+1, got, wait4, st.Problems)
		}
		t.Logf("process %d (%d of 2, %s): recorded %v, burned %v, wait4 %v", pid, i+1, st.Source, got, burned, wait4)
	}
	t.Logf("%s: problems %q", st.Source, st.Problems)
	if !same[0].Exit.Before(same[1].Creation) {
		t.Errorf("pid %d: the first exited %v, the second was created %v", pid, same[0].Exit, same[1].Creation)
	}
	return same
}

// The reproducer: a neighbour creating processes takes the pid the tree
// freed before the tree gets it back. Every exit on the machine has a
// taskstats record, and with system-wide events every task has its perf
// records: the neighbour's have the pid's ids, and are not the tree's.
// Here the neighbour is sh, outside the recorded tree, steered onto the
// pid between the helper's two children by the sh that starts it (not by
// this process, whose runtime may start a thread, which would take the pid
// for good, while it forks), and checked to have had it by its own $$; it
// burns a few ms, so that its name and its times, given to either child,
// show.
func TestRecordReusedPIDNeighbour(t *testing.T) { recordReusedPIDNeighbour(t, nil) }

func recordReusedPIDNeighbour(t *testing.T, test *testHooks) {
	if !canSteerPids() {
		t.Skip("steering pids through /proc/sys/kernel/ns_last_pid needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE (root)")
	}
	cmd := helper("reusepidwait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close() // the helper goes on (and fails) if the test ends early
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(cmd, Options{Samples: true, test: test})
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("recording not possible here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("the helper printed nothing: %v", lines.Err())
	}
	out := lines.Text() + "\n"
	var pid int
	if _, err := fmt.Sscan(out, &pid); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	// As the helper steers its own children: others on the machine may
	// take the pid first.
	const neighbour = `echo "$0" >/proc/sys/kernel/ns_last_pid && sh -c 'echo $$; i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done'; true`
	var created time.Time
	var got bool
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 500 && !got && time.Now().Before(deadline); i++ {
		created = time.Now()
		b, err := exec.Command("/bin/sh", "-c", neighbour, strconv.Itoa(pid-1)).Output()
		if err != nil {
			t.Fatalf("the neighbour: %v", err)
		}
		got = strings.TrimSpace(string(b)) == strconv.Itoa(pid)
	}
	if !got {
		holder, held := pidHolder(pid)
		if held {
			t.Skipf("no neighbour got pid %d in 500 tries or 30 s: another task holds it (%s)", pid, holder)
		}
		t.Fatalf("no neighbour got pid %d in 500 tries or 30 s (%s)", pid, holder)
	}
	if _, err := stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		out += lines.Text() + "\n"
	}
	exitedNotReaped(t, cmd.Process.Pid)
	rec, st, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper reusepidwait: %v", err)
	}
	ps := cmd.ProcessState
	same := checkReusedPID(t, rec, st, ps.UserTime()+ps.SystemTime(), out)
	// The first child exited before the neighbour was created, and had
	// the name of the helper's children.
	if first := same[0]; !first.Exit.Before(created) || first.Name != same[1].Name {
		t.Errorf("pid %d, the first: %q, exited %v; the neighbour created after %v", pid, first.Name, first.Exit, created)
	}
	for _, p := range rec.Processes {
		if p.Name == "sh" {
			t.Errorf("the neighbour's name in the record: process %d", p.ID)
		}
	}
}

// A process that ignores SIGCHLD: the kernel reaps its child itself, and
// the tree's wait4 total leaves out the child's 30 ms, which the record
// holds. CheckTree names the excess, after FitTree as run calls it (which
// has nothing to share out here).
func TestCheckTreeNoCldWait(t *testing.T) { checkTreeNoCldWait(t, nil) }

func checkTreeNoCldWait(t *testing.T, test *testHooks) {
	_, stop := startOrSkip(t, "nocldwait", test)
	rec, st, tree, _ := stop()
	FitTree(rec, &st, rec.Processes[0].ID, tree)
	var child time.Duration
	for _, p := range rec.Processes[1:] {
		child += total(p)
	}
	got := CheckTree(rec, &st, tree)
	// The child burned 30 ms; perf's clock misses a little of each switch
	// to it (more under load), which is not what this test is about. The
	// excess is the child's time less what perf's clock left out of the
	// top process, its exit after the clock stopped, which for a
	// race-enabled test binary under load can pass 5 ms.
	if child < 25*time.Millisecond || got < child-10*time.Millisecond || !hasProblem(st, "ignored SIGCHLD") {
		t.Errorf("the child recorded %v, the tree's wait4 total %v: excess %v, problems %q", child, tree, got, st.Problems)
	}
	t.Logf("%s: the child %v, wait4 %v, excess %v", st.Source, child, tree, got)
}

func TestCheckTreeNoCldWaitPerfOnly(t *testing.T) {
	checkTreeNoCldWait(t, &testHooks{perfOnly: true})
}

// The same with perf alone, and with events inherited by the tree's tasks.
func TestRecordReusedPIDPerfOnly(t *testing.T) {
	recordReusedPID(t, &testHooks{perfOnly: true})
}

func TestRecordReusedPIDInherited(t *testing.T) {
	recordReusedPID(t, &testHooks{perTaskOnly: true})
}

// The reproducer's other failure: a reader that gets no CPU until the
// tree has ended (a busy machine) applies both children's perf records
// before it receives the first child's exit records, which must go to the
// first, not to the latest process with the pid. Held here until Stop.
func TestRecordReusedPIDExitsLate(t *testing.T) {
	recordReusedPID(t, &testHooks{holdDrains: make(chan struct{})})
}

func TestRecordReusedPIDExitsLateInherited(t *testing.T) {
	recordReusedPID(t, &testHooks{holdDrains: make(chan struct{}), perTaskOnly: true})
}

// The neighbour's taskstats record, with events inherited by the tree's
// tasks (no perf record of the neighbour's to go by).
func TestRecordReusedPIDNeighbourInherited(t *testing.T) {
	recordReusedPIDNeighbour(t, &testHooks{perTaskOnly: true})
}

// With system-wide events (root), the tree is picked out by who created
// whom: a busy neighbour's processes and threads are not in it.
func TestRecordSystemWideTreeOnly(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a neighbour creating processes throughout
		for {
			select {
			case <-stop:
				return
			default:
				exec.Command("true").Run()
			}
		}
	}()
	_, stopRec := startOrSkip(t, "tree", nil)
	rec, st, _, _ := stopRec()
	if !st.SystemWide {
		t.Skip("no system-wide events here (not root)")
	}
	burners := 0
	for _, p := range rec.Processes {
		if p.Name == "true" {
			t.Errorf("the neighbour's process %d is in the record", p.ID)
		}
		if p.User+p.Kernel >= 90*time.Millisecond {
			burners++
		}
	}
	if burners < 3 { // the helper's 3 children burn 100 ms each
		t.Errorf("%d of %d processes burned 90 ms or more, want the 3 children", burners, len(rec.Processes))
	}
}

// The reader paces itself where the ring buffers are not polled: the
// fullest buffer an eighth full at the next round, the wait between
// minPace and twice the last, at most pollInterval.
func TestPace(t *testing.T) {
	const size = 1 << 16
	idle, busy := newFakeRing(t, 1), newFakeRing(t, 1)
	meta := busy.meta
	r := &Recorder{rings: []*ring{idle.ring, busy.ring}, ringBytes: size, paced: minPace}
	var got []time.Duration
	for _, n := range []uint64{0, 0, 0, 0, 0, 0, size, size / 8, size / 16, size / 4, size, size, 0} {
		meta.Data_tail = 1 << 40
		meta.Data_head = meta.Data_tail + n
		r.pace()
		got = append(got, r.paced)
	}
	want := []float64{2, 4, 8, 16, 20, 20, 2.5, 2.5, 5, 2.5, 1, 1, 2} // ms
	for i := range want {
		if w := time.Duration(want[i] * float64(time.Millisecond)); got[i] != w {
			t.Fatalf("waits %v, want %v ms", got, want)
		}
	}
}

// Unprivileged (counters inherited by the tree, their buffers not polled)
// with the smallest buffers openAll settles for (8 pages, 32 KiB), a burst
// of 4,000 threads is recorded whole: no kernel wakeup calls the reader,
// its rounds come as pace sets them. A reader that gets no CPU loses
// records whatever its pace (a 32-KiB buffer holds about 200 tasks, a few
// ms of this burst). So beside the recording a probe asks the scheduler
// every millisecond how long each thread of this process, the reader's
// among them, waited for a CPU (schedstat's run_delay, which grows by a
// whole wait when it ends). A loss fails the test where no thread waited
// a quarter of the time a buffer took to fill at the burst's rate at once
// (the reader loses records when it comes seven eighths of that late);
// where one did, the machine did not give this process the CPU when it
// asked, and the result says what was lost and how long it waited.
func TestRecordPacedKeepsUp(t *testing.T) {
	test := &testHooks{ringPages: 8, perfOnly: true}
	// A reader at a sound pace loses records now and then even so (about
	// 1 burst in 7 on a quiet 2-vCPU VM, the burst's 4,000 threads on the
	// same CPUs as the reader); one whose pace is broken loses them in
	// every burst. So a burst that is whole, or whose loss the machine
	// explains, passes, and the test fails when three bursts in a row lose
	// records the machine does not explain.
	var tries []string
	for range 3 {
		msg, ok := recordPacedOnce(t, test)
		if ok {
			t.Log(msg)
			return
		}
		tries = append(tries, msg)
	}
	t.Errorf("3 bursts of 3 lost records:\n%s", strings.Join(tries, "\n"))
}

// recordPacedOnce records one burst for TestRecordPacedKeepsUp, with its
// test hooks, and says what it saw, and whether that passes.
func recordPacedOnce(t *testing.T, test *testHooks) (string, bool) {
	probe := startWaitProbe(t)
	busy0, self0 := machineBusy(t), selfCPU()
	r, stop := startOrSkip(t, "threads:4000:0:2", test)
	if r.system {
		t.Fatal("perf alone: the events are the tree's own, not system-wide")
	}
	rec, stats, child, _ := stop()
	longest, wakeups := probe()
	// The CPU the machine gave to work other than this test and its
	// child while they ran (/proc/stat, in 10-ms ticks per CPU).
	others := machineBusy(t) - busy0 - (selfCPU() - self0) - child
	threads := rec.Processes[0].Threads
	var bad []string
	if stats.LostRecords > 0 || hasProblem(stats, "dropped") || hasProblem(stats, "not seen") {
		bad = append(bad, fmt.Sprintf("%d-page buffers: stats %+v", test.ringPages, stats))
	}
	if n := len(threads); n < 4001 { // the Go runtime's threads too
		bad = append(bad, fmt.Sprintf("%d threads recorded, want 4,000 and the main thread at least", n))
	}
	// The burst's span, from the first thread created to the last one's
	// creation (as recorded: a loss leaves some unknown), and how long a
	// buffer took to fill at its rate were every task's records in one
	// buffer.
	var first, last time.Time
	known := 0
	for _, th := range threads {
		if th.Creation.IsZero() {
			continue
		}
		known++
		if first.IsZero() || th.Creation.Before(first) {
			first = th.Creation
		}
		if th.Creation.After(last) {
			last = th.Creation
		}
	}
	const taskBytes = 150 // a creation, a name and an exit record
	span := last.Sub(first)
	fill := span * time.Duration(stats.BufferBytes/taskBytes) / time.Duration(max(known, 1))
	saw := fmt.Sprintf("%d threads created over %v (a %d-byte buffer full in %v at that rate); the longest wait of one of this process's threads for a CPU %v (%d looks); other work's CPU meanwhile %v",
		known, span.Round(time.Millisecond), stats.BufferBytes, fill.Round(100*time.Microsecond), longest.Round(10*time.Microsecond), wakeups, others.Round(time.Millisecond))
	switch {
	case len(bad) == 0:
		return "recorded whole: " + saw, true
	case known < 2:
		return fmt.Sprintf("fewer than 2 thread creations recorded, so no rate to judge the loss by:\n%s", strings.Join(bad, "\n")), false
	// /proc/stat counts in 10-ms ticks on each CPU: other work is
	// judged from 50 ms up.
	case longest >= fill/4 || others >= max(span/4, 50*time.Millisecond):
		return fmt.Sprintf("lost records, but the machine kept this process from a CPU when it asked, or ran other work (%s): the pace is not judged by this run:\n%s", saw, strings.Join(bad, "\n")), true
	default:
		return fmt.Sprintf("lost records, though the machine ran this process when it asked (%s):\n%s", saw, strings.Join(bad, "\n")), false
	}
}

// machineBusy is the CPU time the machine's CPUs spent running anything
// (/proc/stat's first line: all but idle and iowait), to a tick per CPU.
func machineBusy(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is in user already
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q", line)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// startWaitProbe starts a thread that wakes every millisecond and reads
// the schedstat of every thread of this process: its second field, the
// time the thread has waited on a run queue for a CPU, grows when a wait
// ends, by the whole wait. done stops it and returns the longest growth of
// one thread's between two wakeups (each wait of the reader's thread
// among them, one at a time where the wakeups come every millisecond) and
// the number of wakeups.
func startWaitProbe(t *testing.T) (done func() (longest time.Duration, wakeups int)) {
	t.Helper()
	stop := make(chan struct{})
	type result struct {
		longest time.Duration
		n       int
		err     error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		prev := map[string]int64{}
		var r result
		for {
			tasks, err := os.ReadDir("/proc/self/task")
			if err != nil {
				r.err = err
				break
			}
			for _, e := range tasks {
				b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
				if err != nil {
					continue // the thread exited
				}
				f := strings.Fields(string(b))
				if len(f) < 2 {
					r.err = fmt.Errorf("schedstat of thread %s: %q", e.Name(), b)
					break
				}
				waited, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					r.err = fmt.Errorf("schedstat of thread %s: %q", e.Name(), b)
					break
				}
				if p, ok := prev[e.Name()]; ok {
					r.longest = max(r.longest, time.Duration(waited-p))
				}
				prev[e.Name()] = waited
			}
			if r.err != nil {
				break
			}
			r.n++
			select {
			case <-stop:
				res <- r
				return
			default:
			}
			ts := unix.Timespec{Nsec: int64(time.Millisecond)}
			unix.Nanosleep(&ts, nil)
		}
		<-stop
		res <- r
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop) }) }
	t.Cleanup(end) // a test that skips or fails before done
	return func() (time.Duration, int) {
		end()
		r := <-res
		if r.err != nil {
			t.Fatalf("the wait probe: %v", r.err)
		}
		return r.longest, r.n
	}
}

// The top process's main thread is split as the kernel splits the process
// for its parent's wait4: cputime_adjust of its tick samples in ns, which
// Rule is. Its stat file's ticks (cputime_adjust's output, in 10-ms
// USER_HZ steps) are 0 and 0 for anything under 10 ms, which Rule takes
// for all user, and round longer runs by up to a step each way. dd
// copying /dev/zero to /dev/null, one thread spending most of its time in
// the kernel: its record's split against its own wait4 rusage (µs), no
// one having read the process's split before (the kernel keeps the
// largest split it has reported, per process).
func TestRecordTopSplit(t *testing.T) { recordTopSplit(t, nil) }

func recordTopSplit(t *testing.T, test *testHooks) {
	// Another reader of dd's /proc/PID/stat while it runs (a listing in
	// another package's test) makes the kernel keep the split it gave then,
	// which can move wait4's off the pure rule: up to three tries each.
	for _, count := range []string{"300", "100000"} {
		var misses []string
		for len(misses) < 3 {
			miss, skip := topSplitOnce(t, count, test)
			if skip != "" {
				t.Skip(skip)
			}
			if miss == "" {
				break
			}
			misses = append(misses, miss)
		}
		if len(misses) == 3 {
			t.Errorf("dd count=%s, three tries:\n%s", count, strings.Join(misses, "\n"))
		}
	}
}

// topSplitOnce records one dd and returns how its thread's split differed
// from its wait4 rusage ("" if not), or why the recording could not be
// made.
func topSplitOnce(t *testing.T, count string, test *testHooks) (miss, skip string) {
	cmd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=4k", "count="+count)
	r, err := Start(cmd, Options{test: test})
	if err != nil {
		return "", fmt.Sprintf("recording not possible here: %v", err)
	}
	exitedNotReaped(t, cmd.Process.Pid)
	rec, st, err := r.Stop()
	cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Processes) != 1 || len(rec.Processes[0].Threads) != 1 {
		t.Fatalf("dd count=%s: %d processes, want 1 with 1 thread: %+v", count, len(rec.Processes), rec.Processes)
	}
	th := rec.Processes[0].Threads[0]
	u, k := cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
	line := fmt.Sprintf("dd count=%s (%s): the thread's user %v, kernel %v; wait4's %v and %v", count, st.Source, th.User, th.Kernel, u, k)
	t.Log(line)
	const slack = 5 * time.Microsecond // rusage's µs, each way
	if d, e := th.User-u, th.Kernel-k; d > slack || d < -slack || e > slack || e < -slack {
		return line, ""
	}
	return "", ""
}

func TestRecordTopSplitPerfOnly(t *testing.T) {
	recordTopSplit(t, &testHooks{perfOnly: true})
}

// canSteerPids says whether this process may write
// /proc/sys/kernel/ns_last_pid: its effective capabilities (capget, as
// access_linux_test.go reads them) hold CAP_SYS_ADMIN or
// CAP_CHECKPOINT_RESTORE.
func canSteerPids() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	return eff&(1<<unix.CAP_SYS_ADMIN|1<<unix.CAP_CHECKPOINT_RESTORE) != 0
}

// An exit record that waits to the end for a task of the tree counts as a
// task seen only by its exit record where perf records were lost, and as
// another process's (which took pids the tree had used) where none were.
func TestExitOnlyNeedsLostRecords(t *testing.T) {
	r := &Recorder{pid: 100, procs: map[int]*proc{100: {pid: 100}, 200: {pid: 200, ppid: 100}, 300: {pid: 300, ppid: 200}}}
	// No perf record named a task 300: its exit record waits.
	r.takeExit(&exitRecord{PID: 300, TGID: 300, PPID: 200, received: time.Now()})
	if n := r.exitOnly(false); n != 0 {
		t.Errorf("no records lost: %d tasks seen only by their exit record, want 0", n)
	}
	if n := r.exitOnly(true); n != 1 {
		t.Errorf("records lost: %d tasks seen only by their exit record, want 1", n)
	}
}
