// Package cputime answers, for any thread or process, the questions of the
// Win32 calls GetThreadTimes and GetProcessTimes: when did it start, when did
// it exit, and how much CPU time did it spend in kernel mode and in user mode.
// The answers come in Go types (time.Time, time.Duration, iterators, errors
// testable with errors.Is); Filetime and Ticks give the same values as Win32
// FILETIMEs, with the calendar conversions of the Win32 time functions.
//
// # Linux
//
// The kernel keeps two kinds of CPU accounting. The scheduler knows each
// task's on-CPU time exactly (sum_exec_runtime, in nanoseconds); the split
// between user and kernel mode is only sampled, one timer tick at a time.
// cputime reports the exact total, split in the sampled ratio exactly as the
// kernel's own cputime_adjust does for /proc/PID/stat and getrusage, so
// Kernel + User equals the exact total and neither part ever decreases
// between reads of the same task in one process. The exact total comes from:
//
//   - the calling process and any other process: its process CPU clock
//     (clock_gettime on a CPUCLOCK_SCHED clock id, which needs no privilege),
//     exact to the nanosecond at the moment of the call, exited threads
//     included;
//   - threads of the calling process: their thread CPU clocks, likewise
//     exact to the nanosecond;
//   - threads of other processes, whose CPU clocks the kernel does not let
//     other processes read: /proc/PID/task/TID/schedstat, exact at every
//     context switch and updated at every scheduler tick while the thread
//     runs, so never staler than one tick. On a kernel built without
//     CONFIG_SCHED_INFO, which has no schedstat files, these totals fall
//     back to the whole USER_HZ ticks of the thread's stat file.
//
// Existing libraries read utime and stime from /proc stat files, which are
// rounded down to whole USER_HZ ticks (10 ms); cputime's totals are not.
//
// Creation times come from the start time in /proc stat files, counted in
// USER_HZ ticks of CLOCK_BOOTTIME, converted to wall-clock time with the
// offset CLOCK_REALTIME − CLOCK_BOOTTIME read at the time of the query. The
// kernel rounds the start down to a whole tick; cputime adds half a tick, so
// creation times are unbiased and within 5 ms (at USER_HZ = 100) of the
// truth, and never later than the moment of the query. /proc/stat's btime is never used: it is whole seconds and goes stale
// whenever the clock is stepped.
//
// Exit times are not observed yet: Times.Exit is zero, and a task that has
// exited and been reaped is reported as ErrNotFound.
//
// Identity: a handle to a thread of another process reads files it keeps
// open, which the kernel binds to that one thread, so it can never report
// another task. Process handles and handles to threads of the calling
// process read CPU clocks by id; until they hold pidfds, such a handle whose
// task exits and whose id the kernel hands to a new task reports the new
// task. Ids are reused only after the kernel has cycled through pid_max
// (4,194,304 by default on 64-bit systems) of them.
//
// A thread or process that vanishes during an enumeration is skipped, never
// reported as an error of the whole scan.
//
// # Windows
//
// The native backend (GetProcessTimes, GetThreadTimes) is not written yet:
// every query fails with ErrNotSupported. The package compiles for Windows.
//
// # Goroutines and threads
//
// A goroutine is not a thread: CurrentThread and CurrentThreadID only mean
// something in a goroutine locked to its thread with runtime.LockOSThread.
package cputime
