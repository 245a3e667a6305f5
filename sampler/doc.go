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
// Exits: a pidfd held per process wakes a watcher goroutine when the
// process exits, which records the instant (Times.Exit of its Exited
// entry). Threads and processes without a pidfd get the bracket: last seen
// alive at the start of a refresh that read them, first seen gone at the
// read or listing that missed them. A zombie process (exited, not yet
// reaped by its parent) is reported exited with its final times at once.
//
// Descriptors: the sampler keeps at most a budget of descriptors, derived
// from RLIMIT_NOFILE (the soft limit raised to the hard one, as Go's os
// package does, and a quarter of it, at least 128, left to the caller) or
// given as Options.MaxFiles. Beyond it, threads are read by opening their
// files for each read (three system calls instead of one): slower, never
// an error. Such a thread's identity is then checked by its start time
// whenever its run time moves, since no open file binds it.
//
// # Windows
//
// Each refresh takes the root package's native snapshot (Toolhelp
// enumeration, GetProcessTimes, GetThreadTimes) and matches tasks by id
// and creation time; Delta, New and the exit bracket mean the same. There
// is nothing to keep open, so no budget, and no exact exit instant.
package sampler
