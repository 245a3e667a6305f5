package sampler

import (
	"time"

	"github.com/cputime/cputime"
)

// Task is one process or thread as of one refresh.
type Task struct {
	PID  int    // process id
	TID  int    // thread id; 0 for a process
	Name string // Linux: comm (at most 15 bytes); Windows: the process's image name

	// State is the scheduler state letter of Linux's stat file ('R'
	// running, 'S' sleeping, 'D' disk sleep, 'T' stopped, 'Z' zombie, 'I'
	// idle kernel thread, ...), as of the last time the task's times moved
	// (or it was first seen): a task whose times do not move is not read
	// again for its state. A process's is its main thread's, as in
	// /proc/PID/stat: 'Z' with Threads above 1 is a process whose main
	// thread exited while others run, alive. 0 where the system does not
	// say (Windows).
	State byte

	// KernelThread is set for Linux kernel threads (PF_KTHREAD), whose
	// time is all kernel time.
	KernelThread bool

	// Threads is the number of threads of a process as of its last stat
	// read (Linux: num_threads, which counts an exited main thread until
	// the process ends); 0 for a thread.
	Threads int

	// Times are the task's times as the root package reports them for the
	// same task in the same state: Creation, and User + Kernel the exact
	// on-CPU time split by the one rule (account.Rule). Neither User nor
	// Kernel ever decreases while the sampler tracks the task. Exit is set
	// only in Exited entries whose exit instant a pidfd reported
	// (ExitSource cputime.ExitObserved); otherwise Exit is zero and the
	// Exited entry's bracket says when.
	Times cputime.Times

	// Delta is the exact CPU time used since the previous refresh: the
	// growth of User + Kernel, for %CPU. For a task that appeared since the
	// previous refresh it is its whole CPU time, except for the thread that
	// took its process's main thread id by calling exec (Linux): its time
	// before was reported under its old id, so Delta counts only what it
	// used since. In the first refresh it is zero (there is no interval
	// yet). No thread's Delta exceeds one CPU over the interval.
	Delta time.Duration

	// New is set for a task that appeared since the previous refresh
	// (never in the first refresh, where every task is simply there).
	New bool
}

// Exited is a task seen in an earlier refresh that has exited since, with
// what was last seen of it. It is reported once.
type Exited struct {
	// Task holds the last values read. For a process read as a zombie
	// (exited, not yet reaped), these are its final times, and Delta its
	// CPU since the previous refresh; otherwise Delta is zero.
	Task

	// Final says Task's times were read after the exit, from a process's
	// zombie: its exact final times. Otherwise (a process reaped before a
	// refresh read it, any thread, and every task on Windows) they are the
	// last read while it lived, short by what it ran since.
	Final bool

	// LastSeen is the last instant the task was known to be alive, and
	// GoneAt the first instant it was known to have exited: its exit lies
	// in [LastSeen, GoneAt]. Where a pidfd reported the exit, Times.Exit
	// holds the instant (when the sampler woke on it, microseconds after
	// the kernel's exit) and lies in that bracket.
	LastSeen, GoneAt time.Time
}

// Sample is the result of one refresh. Its slices are sorted by PID, then
// TID.
type Sample struct {
	// Time is when the refresh started, and Interval the time since the
	// previous refresh started (zero in the first).
	Time     time.Time
	Interval time.Duration

	// First is set for the first refresh of a Sampler, which has no
	// interval: every Delta is zero, and no task is New.
	First bool

	Processes []Task // the watched processes that are alive
	Threads   []Task // their threads, with Options.Threads

	ExitedProcesses []Exited // processes that exited since the previous refresh
	ExitedThreads   []Exited // threads that exited since the previous refresh (with Options.Threads)

	// Denied holds the processes that exist but whose files the caller may
	// not read (access denied: another user's under hidepid=1, ptrace
	// rules): PID, and User and Kernel as the process's CPU clocks give
	// them, which need no permission (Linux; a fresh split each refresh,
	// no Delta). Name and Creation are unknown; Options.Match cannot be
	// asked, so they are here whatever it says. Processes the system hides
	// altogether (hidepid=2) are not listed and cannot be counted.
	Denied []Task

	// Errors holds what failed for single tasks (a value the kernel could
	// not have produced, wrapping cputime.ErrInvalidData; a process that
	// may not be read, wrapping cputime.ErrAccessDenied, for the processes
	// named in Options.PIDs only: the others are in Denied). Those tasks
	// are left out of the slices above, for this refresh only. A task that
	// vanishes while being read is not an error: it is Exited.
	Errors []error
}

// Stats describes the sampler's own cost and resources.
type Stats struct {
	// Files is the number of descriptors the sampler keeps open now, and
	// Budget the most it will keep.
	Files, Budget int
	// Degraded is the number of threads read by opening a file per read
	// because the budget was reached (Linux).
	Degraded int
	// Reads is the number of file reads (pread, or open+read+close when
	// degraded) and CPU clock reads of the last refresh, and Scans its
	// directory passes (getdents calls): the system calls that grow with
	// the number of tasks.
	Reads, Scans int
}
