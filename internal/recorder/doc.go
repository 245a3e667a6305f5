// Package recorder records every process and thread of a process tree that
// cputime starts ("cputime run"), each with its creation time, exit time and
// final user and kernel times, including tasks that live for less than a
// millisecond, without privilege. It fills a timeline.Recording.
//
// On Linux it uses perf_event_open: one software task-clock counter per
// online CPU, opened on the child before its first instruction (the child
// starts under PTRACE_TRACEME, which stops it at exec; the counters are
// opened and the tracer detaches at once), with inherit and inherit_stat so
// that every task the child creates gets counters of its own. The kernel
// then writes, into one ring buffer per CPU and without stopping anyone, a
// FORK record at each task's creation, a COMM record at each rename or exec,
// an EXIT record at each exit and, at each exit, a READ record with the
// task's own final count: its exact on-CPU time in nanoseconds, measured by
// the scheduler's clock. perf_event_paranoid 2 (the usual default) allows
// this for one's own children; the counters must exclude the kernel there,
// which drops the kernel-mode samples but not the count (see below).
//
// The counters also sample every millisecond of a task's CPU time
// (an hrtimer that runs while the task runs, like the scheduler tick, but
// 4 times as often at HZ=250). A sample says whether the task was in user
// mode. The user/kernel split of each task's exact total follows
// account.Rule, fed with that evidence: user = user samples × the period,
// kernel = the rest. This is the same kind of evidence as the stat
// utime/stime ticks the rule is fed for other processes' threads (which mode
// a timer interrupt found the task in), sampled more often; stat itself
// cannot be read at an exit without stopping the task (ptrace), which this
// recorder does not do. The top process's main thread, still readable as a
// zombie when the recording stops, gets its stat and schedstat instead, as
// any other reader would.
//
// Lost records (a ring buffer full when the kernel wrote) are counted from
// the kernel's LOST and LOST_SAMPLES records and reported, never silent; a
// thread whose final READ records did not all arrive is marked incomplete.
//
// Elsewhere Start returns an error wrapping ErrNotSupported.
package recorder
