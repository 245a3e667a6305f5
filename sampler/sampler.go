package sampler

import (
	"errors"
	"fmt"
	"time"

	"github.com/cputime/cputime"
)

// Options selects what a Sampler watches. The zero Options watches every
// process, without their threads, within the default descriptor budget.
type Options struct {
	// PIDs, if not empty, limits the sampler to these processes. A listed
	// process that does not exist (yet, or any more) is simply absent from
	// the samples; a new process that reuses one of these ids is a new
	// task, reported as new.
	PIDs []int

	// Match, if set, keeps only the processes whose name (Linux: comm, at
	// most 15 bytes; Windows: image name) it accepts, and their threads.
	// It is asked again whenever a process's name changes (an exec), so a
	// process that execs into a matching program appears then. It must not
	// block and must give the same answer for the same name.
	Match func(name string) bool

	// Threads adds each thread of the watched processes to the samples
	// (Sample.Threads, Sample.ExitedThreads).
	Threads bool

	// MaxFiles caps the file descriptors the sampler keeps open between
	// refreshes. Zero means a budget derived from RLIMIT_NOFILE: the soft
	// limit is raised to the hard limit (as Go's os package does at init),
	// and the sampler takes at most three quarters of it, leaving the rest
	// (at least 128) to the caller. The budget is never exceeded: beyond it
	// tasks are read by opening their files for each read, which costs more
	// system calls but is never an error. Ignored on Windows.
	MaxFiles int
}

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

// ErrClosed is returned by Refresh after Close.
var ErrClosed = errors.New("sampler closed")

// Sampler refreshes the times of a set of processes (and their threads)
// again and again, at the cost of about one read per task whose times have
// not changed. It is not safe for concurrent use: callers that refresh from
// several goroutines (a Prometheus collector) serialize the calls.
type Sampler struct {
	opts   Options
	sys    sys
	closed bool
	prev   time.Time
	n      int // refreshes done
}

// New returns a sampler for opts. It reads nothing yet: the first Refresh
// opens what it keeps.
func New(opts Options) (*Sampler, error) {
	for _, pid := range opts.PIDs {
		if pid <= 0 {
			return nil, fmt.Errorf("sampler: process id %d: %w", pid, cputime.ErrInvalidArgument)
		}
	}
	if opts.MaxFiles < 0 {
		return nil, fmt.Errorf("sampler: MaxFiles %d: %w", opts.MaxFiles, cputime.ErrInvalidArgument)
	}
	s := &Sampler{opts: opts}
	if err := s.sys.init(&s.opts); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	attachCleanup(s)
	return s, nil
}

// Refresh reads every watched task and returns what changed since the
// previous refresh. It fails only when nothing could be read at all (/proc
// missing, the sampler closed); what fails for one task is in
// Sample.Errors.
func (s *Sampler) Refresh() (*Sample, error) {
	dst := new(Sample)
	if err := s.RefreshInto(dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// RefreshInto is Refresh into dst, reusing its slices' storage: a caller
// that refreshes thousands of tasks every second allocates nothing per task
// once the slices have grown. The previous contents of dst are lost.
func (s *Sampler) RefreshInto(dst *Sample) error {
	if s.closed {
		return ErrClosed
	}
	now := time.Now()
	*dst = Sample{
		Time:            now,
		First:           s.n == 0,
		Processes:       dst.Processes[:0],
		Threads:         dst.Threads[:0],
		ExitedProcesses: dst.ExitedProcesses[:0],
		ExitedThreads:   dst.ExitedThreads[:0],
		Denied:          dst.Denied[:0],
		Errors:          dst.Errors[:0],
	}
	if s.n > 0 {
		dst.Interval = now.Sub(s.prev)
	}
	if err := s.sys.refresh(dst); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.prev = now
	s.n++
	return nil
}

// Stats returns the sampler's resources and the cost of its last refresh.
func (s *Sampler) Stats() Stats { return s.sys.stats() }

// Close releases every descriptor the sampler holds. Refresh fails after
// it; closing twice is harmless. A Sampler dropped without Close releases
// its descriptors when the garbage collector finds it.
func (s *Sampler) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.sys.close()
}
