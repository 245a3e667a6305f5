// Package sampler reads the CPU times of many processes and threads again
// and again, as top, an exporter or a profiler does, at the cost of about
// one system call per task whose times have not changed.
//
// A Sampler is created with Options (every process or a list of pids, a
// name filter, threads or not) and refreshed as often as the caller likes.
// Each Refresh returns a Sample: every watched task's times as the root
// package reports them for the same task in the same state (creation
// time, exact user and kernel time, which never decrease while the
// sampler tracks the task), the exact CPU time each used since the
// previous refresh (Task.Delta, for %CPU), the tasks that appeared
// (Task.New), and the tasks that exited since, reported once with their
// last-seen times and a bracket around their exit (Exited.LastSeen,
// Exited.GoneAt), or the exit instant itself where the kernel told it.
// What fails for one task (a value the kernel could not have produced) is
// in Sample.Errors and leaves that task out of that one sample; a task
// that exits while being read is never an error.
//
// # Linux
//
// Between refreshes the sampler keeps open, for each thread, its
// /proc/PID/task/TID/schedstat file (and its stat file, while half of the
// descriptor budget is left); for each process, its /proc/PID/stat file, a
// pidfd and, with threads, its /proc/PID/task directory. The kernel binds
// an open /proc file to its task, not to the id: a task whose id is reused
// by a new one is reported exited, and the new one is a new entry that
// inherits nothing from it.
//
// A refresh lists /proc (or the chosen pids) and each task directory with
// one getdents pass over the kept-open directory, then reads:
//
//   - a thread: one pread of its schedstat (the exact run time, in ns). Only
//     when it moved does it read the thread's stat too (utime and stime, the
//     tick samples that split the time between user and kernel mode, and
//     the state); name and creation time are cached. Threads of the calling
//     process are read through their own thread CPU clocks instead, exact
//     to the nanosecond, as the root package reads them.
//   - a process: its CPUCLOCK_SCHED clock (exact, exited threads
//     included), then a poll of its pidfd that proves the clock read by pid
//     was this task's. Only when the clock moved does it read the
//     tick-sampled CPUCLOCK_VIRT and CPUCLOCK_PROF clocks and the stat file
//     (state, thread count, name).
//
// The split follows account.Rule, the one rule of the root package, with a
// memory per entry (account.Split) that keeps both parts from going
// backwards; kernel threads (PF_KTHREAD) have only kernel time.
//
// A process lives while any of its threads does: a main thread that exited
// alone (a zombie in /proc/PID/stat) is reported exited as a thread, and
// the process goes on. A thread other than the main one that calls exec
// takes the main thread's id (the kernel hands its pid to it, and with it
// every file the sampler keeps open for that id): the process continues
// under its pid with its new name, the old main thread and the thread
// that called exec are reported exited with their last-read times, and
// the main thread's id is a new entry whose first Delta counts only what
// it used since it was last read under its old id. The sampler sees the
// hand-over where the id's counters could not belong to the task it held
// (a zombie alive again, a counter that went back, or more run time than
// one CPU gives since the last read, allowing one 10 ms tick of lag);
// where the new task's run time lies within one interval of the old
// one's, it cannot tell, and credits the difference (at most one CPU's
// worth) to the main thread's entry.
//
// Creation times are dated with the boot offset of each refresh, as every
// path of the root package dates them when it answers: a clock step moves
// every task's creation time by the step in the next refresh, whether the
// task ran or not.
//
// A process whose files may not be read (another user's under hidepid=1)
// is in Sample.Denied with the CPU time its process clocks give, which
// need no permission: shown and counted, never silently left out.
//
// Exits: a pidfd held per process wakes a watcher goroutine when the
// process exits, which records the instant (Times.Exit of its Exited
// entry). Threads and processes without a pidfd get the bracket: last seen
// alive at the start of a refresh that read them, first seen gone at the
// read or listing that missed them. A zombie process (exited, not yet
// reaped by its parent, its threads all gone) is reported exited with its
// final times at once.
//
// Descriptors: the sampler keeps at most a budget of descriptors, derived
// from RLIMIT_NOFILE (the soft limit raised to the hard one, as Go's os
// package does, and a quarter of it, at least 128, left to the caller) or
// given as Options.MaxFiles. Beyond it, threads are read by opening their
// files for each read (three system calls instead of one): slower, never
// an error. No open file binds such a task, so after each read by name
// the sampler opens a pidfd for its id, compares the pidfs inode (Linux
// 6.9, a number the kernel never gives another task) with the one learned
// before its first read, and closes it (three more system calls): a task
// holds its id from birth to reaping and never gets it back, so a reused
// pid or tid is a new entry, even when the new task started in the same
// clock tick. Without pidfs the check falls back to the start tick and
// the counters (a run time that went back or grew faster than one CPU),
// which a task started in the same tick with counters past the old one's
// would pass.
//
// # Windows
//
// Each refresh takes the root package's native snapshot (Toolhelp
// enumeration, GetProcessTimes, GetThreadTimes) and matches tasks by id
// and creation time; Delta, New and the exit bracket mean the same. There
// is nothing to keep open, so no budget, and no exact exit instant.
package sampler
