package taskstats

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

// A child's exit record, through Times and the project's split, agrees
// with what its parent's wait4 reports: the total, and each mode's part
// (wait4's are the kernel's cputime_adjust of the same tick samples),
// within a tick and the teardown after the record.
func TestTimesOfExitAgreeWithWait4(t *testing.T) {
	l := listenOrSkip(t, Options{})
	c := collect(l)
	defer c.stop(t)

	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done`)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	bs := c.waitFor(5*time.Second, func(bs []Batch) bool { _, _, ok := findChild(bs, pid); return ok })
	r, _, ok := findChild(bs, pid)
	if !ok {
		t.Fatalf("no exit record of child %d among %d batches", pid, len(bs))
	}
	tm := r.Times()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	user, kernel := account.Rule(account.Evidence{UTime: tm.UTime, STime: tm.STime, RTime: tm.Total, KThread: tm.KThread})
	t.Logf("child %d: times %+v, split %v + %v; wait4 %v + %v", pid, tm, time.Duration(user), time.Duration(kernel),
		time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()))
	if tm.KThread {
		t.Errorf("a shell taken for a kernel thread: %+v", r.Stats)
	}
	// The record is short of wait4's by what ran after its task's last
	// tick or switch and the teardown after it; tick samples may also be
	// over it by up to a tick each.
	slack, over := tick+3*time.Millisecond, 2*time.Microsecond
	if !tm.Exact {
		slack, over = slack+tick, tick
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if d := time.Duration(tm.Total) - total; d > over || -d > slack {
		t.Errorf("total: record says %v, wait4 %v: want within [-%v, +%v] of it", time.Duration(tm.Total), total, slack, over)
	}
	if d := time.Duration(user) - time.Duration(ru.Utime.Nano()); d > slack || -d > slack {
		t.Errorf("user: split %v, wait4 %v", time.Duration(user), time.Duration(ru.Utime.Nano()))
	}
	if d := time.Duration(kernel) - time.Duration(ru.Stime.Nano()); d > slack || -d > slack {
		t.Errorf("kernel: split %v, wait4 %v", time.Duration(kernel), time.Duration(ru.Stime.Nano()))
	}
}

// Times tells kernel threads from user tasks as /proc does: for live tasks
// queried through taskstats (the same fill_stats as their exit record),
// KThread matches PF_KTHREAD in each one's stat flags.
func TestTimesKThreadAgreesWithProcFlags(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("no taskstats here: %v", err)
	}
	fs := procfs.NewFS("")
	pids, err := fs.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	var kthreads, users int
	for _, pid := range pids[:min(len(pids), 300)] {
		r, err := Query(Thread, pid)
		if err != nil {
			continue // gone meanwhile
		}
		if r.Version < 12 {
			t.Skipf("taskstats version %d: records before 12 cannot tell a kernel thread", r.Version)
		}
		st, err := fs.ReadStat(pid)
		// A zombie has left its address space (and executable) behind,
		// which an exit record, made before, never sees.
		if err != nil || st.State == 'Z' || st.State == 'X' {
			continue
		}
		want := st.Flags&account.PFKthread != 0
		if got := r.Times().KThread; got != want {
			t.Errorf("task %d (%s, parent %d): KThread %v, but its stat flags %#x say %v", pid, st.Comm, st.PPID, got, st.Flags, want)
		}
		if want {
			kthreads++
		} else {
			users++
		}
	}
	t.Logf("%d kernel threads and %d user processes compared", kthreads, users)
	if users == 0 {
		t.Errorf("no user process compared (this one at least should be): pids %v", pids[:min(len(pids), 10)])
	}
}
