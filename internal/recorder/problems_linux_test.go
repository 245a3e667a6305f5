package recorder

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func hasProblem(st Stats, word string) bool {
	for _, p := range st.Problems {
		if strings.Contains(p, word) {
			return true
		}
	}
	return false
}

// Buffers too small for what the tree writes while the reader is held:
// the kernel drops records, and the recording says so rather than call
// itself complete.
func TestRecordLostFlagged(t *testing.T) {
	old := ringPages
	ringPages = 8
	holdDrains = make(chan struct{})
	defer func() { ringPages, holdDrains = old, nil }()
	r, stop := startOrSkip(t, "threads:2000:0:8")
	// Released once the tree has exited: every record written by then.
	exitedNotReaped(t, r.pid)
	close(holdDrains)
	_, stats, _, _ := stop()
	// The kernel writes its LOST record only before the next record
	// that fits, which may never come once the tree has exited: the
	// records missing then show as tasks without a creation or exit.
	if stats.Complete() ||
		!hasProblem(stats, "dropped") && !hasProblem(stats, "not seen") {
		t.Errorf("%d-page buffers, reader held: stats %+v", ringPages, stats)
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
	perfOnly = true
	defer func() { perfOnly = false }()
	TestRecordThreadExec(t)
}

func TestRecordPerfOnly(t *testing.T) {
	perfOnly = true
	defer func() { perfOnly = false }()
	_, stop := startOrSkip(t, "threads:100:1:4")
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
func TestRecordThreadExec(t *testing.T) {
	_, stop := startOrSkip(t, "threadexec")
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
	perTaskOnly = true
	defer func() { perTaskOnly = false }()
	TestRecordThreadExec(t)
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
	_, stopRec := startOrSkip(t, "tree")
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
