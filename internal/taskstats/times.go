package taskstats

import "math"

// Times is what one record says of its task's CPU time: the total and the
// evidence for dividing it between user and kernel mode. Every reader of
// exit records (the exits command, the exporter, the recorder) takes its
// times from here and splits Total with the project's one rule
// (internal/account's Rule), so that one record gives one answer.
type Times struct {
	// Total is the task's time on a CPU, in ns. Where the kernel keeps
	// delay accounting it is sum_exec_runtime (cpu_run_virtual_total),
	// exact as of the task's last context switch or scheduler tick, and
	// Exact is true. A record without delay accounting (both cpu_run
	// totals zero: a kernel built without CONFIG_TASK_DELAY_ACCT) has only
	// the tick samples: Total is UTime + STime in ns, whole ticks, and
	// Exact is false.
	Total uint64
	Exact bool

	// UTime and STime are the tick samples of user and kernel mode, in µs
	// (ac_utime, ac_stime: task_cputime, before the kernel's
	// cputime_adjust): the evidence for the split. Both are zero for a
	// task that no tick sampled.
	UTime, STime uint64

	// KThread says the task is a kernel thread (PF_KTHREAD). A kernel
	// thread never runs in user mode, so all of Total is kernel time,
	// whatever the ticks say: one that no tick sampled has no user time
	// either, where the bare tick rule (the kernel's cputime_adjust, with
	// stime 0) would make it all user. The record has no copy of the
	// task's flags (ac_flag holds the acct(5) flags alone); a kernel
	// thread is told by what version 12 added: no executable
	// (ac_exe_dev and ac_exe_inode are zero only where
	// get_task_exe_file finds none, which it never does for a kernel
	// thread, and the record is made before do_exit drops a user task's
	// address space) and kthreadd (pid 2) as its parent, or kthreadd
	// itself. Before version 12 no record says, and KThread is false.
	// A process record (Kind Process) is never a kernel thread's: kernel
	// threads have no thread group.
	KThread bool
}

// kthreadd is the pid of the kernel thread that creates the others
// (kernel/kthread.c), their parent in the initial pid namespace, in which
// the kernel writes exit records.
const kthreadd = 2

// Times returns what s says of its task's CPU time (see [Times]).
func (s *Stats) Times() Times {
	t := Times{Total: s.CPURunVirtualTotal, Exact: true, UTime: s.UTime, STime: s.STime}
	if ticks := s.UTime + s.STime; t.Total == 0 && s.CPURunRealTotal == 0 && ticks > 0 {
		// A sum past 2^64 ns (no kernel counts that much) saturates
		// rather than wraps, so that a reader checking the total sees it.
		t.Total, t.Exact = math.MaxUint64, false
		if ticks >= s.UTime && ticks <= math.MaxUint64/1000 {
			t.Total = ticks * 1000
		}
	}
	t.KThread = s.Version >= 12 && s.ExeDev == 0 && s.ExeInode == 0 &&
		(s.PPID == kthreadd || s.PID == kthreadd)
	return t
}

// Sampled says whether t holds evidence for its split: tick samples, or a
// kernel thread's, which needs none.
func (t Times) Sampled() bool { return t.UTime+t.STime > 0 || t.KThread }
