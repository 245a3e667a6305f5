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
//     exited threads included. The kernel sums each thread's exact runtime
//     as of its last context switch or scheduler tick, and brings only the
//     calling thread's up to the moment of the call: a thread that is
//     running on another CPU counts as of its last tick, at most one tick
//     (4 ms at HZ=250) behind. A process whose threads are all off the CPU
//     (blocked, stopped, or exited) is exact to the nanosecond;
//   - threads of the calling process: their thread CPU clocks, exact to the
//     nanosecond at the moment of the call, running or not;
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
// kernel rounds the start down to a whole tick, and cputime reports the
// start of that tick: at most 10 ms (at USER_HZ = 100) before the truth,
// never after it, never after the moment of the query or the task's exit,
// and the same value from every reader at every moment, which a middle of
// the tick could not be for a task younger than half a tick. /proc/stat's
// btime is never used: it is whole seconds and goes stale whenever the
// clock is stepped.
//
// Through a clock step, one rule: every path (handle, one-shot,
// enumeration, sampler, command) in every process dates a task's start
// with the one boot offset current when it answers, so a step of the wall
// clock, or a resume from suspend, once two readings confirm it, moves
// every creation time by the step, and the creation and exit of an exited
// task's record together. A handle therefore does not keep the creation
// time it opened with across a step (Windows keeps it: its kernel dates a
// task once); it is how a process started after the step, which can only
// read the new offset, agrees with it. The offset is one value per
// process; a one-shot, a sampler refresh and a handle whose task ran check
// the clocks for a step on every read, a handle whose task has not run on
// one such read in 64 (reading the wall clock would cost a fifth of its
// query), so within a process every path answers with the same offset at
// any moment.
//
// # Handles, identity and exit
//
// A Process or Thread handle refers to one task for its whole life, as a
// Win32 handle does. On Linux it holds a pidfd (Linux 5.3 for processes;
// PIDFD_THREAD, Linux 6.9, for threads): every read of a CPU clock, which
// the kernel addresses by id, is followed by a check of the pidfd (an
// epoll_wait on an epoll instance that holds only it, cheaper than a poll),
// so a read that might have reached a new task reusing the id is never
// reported.
// Where the kernel has no pidfd of the kind, the handle keeps the task's
// /proc stat file open instead, which the kernel also binds to the task
// (the check then costs a stat read, a few microseconds). Handles to other
// processes' threads read their times through such kept-open files anyway.
//
// When the task exits, the handle records its exit time and its final
// times and reports them from then on, even after the id is reused:
//
//   - Exit time: the moment cputime observed the exit. One goroutine,
//     woken by the runtime poller through an epoll set of every open
//     handle's pidfd, records it when the kernel reports the exit, a
//     fraction of a millisecond after the task's last instruction (more on
//     a loaded machine; docs/figures.md), most of which is the kernel
//     tearing the process down. Without pidfds, one poller
//     goroutine for every handle looks for exits, reading one stat file per
//     task however many handles it has, every 10 ms after an exit and
//     slowing to every 250 ms while none happens (less often only if the
//     tasks are so many that this would take more than 1 % of a CPU); an
//     exit it finds is dated as one found already exited (ExitScheduler or
//     ExitNoLaterThan). A query that sees the exit first records it. A task
//     that had already exited when the handle was opened gets the time of
//     the opening: an upper bound.
//   - Final times of a process: exact, read from the zombie before its
//     parent reaps it (for a child of the caller, if it is read before the
//     caller waits for it: call Process.Wait before exec.Cmd.Wait), and
//     they agree with the parent's wait accounting (rusage) to the
//     microsecond. If the parent reaped it first, they are the last times
//     the handle saw: read the moment the kernel reported the exit (which
//     it does while the process is still finishing its exit, so a little
//     may be missing; without pidfds, up to 250 ms later, by when a parent
//     has usually reaped it), else when Wait started or at the latest
//     query: Wait reads nothing while it waits, so call Times now and then
//     to keep them recent. Process.FinalExact tells the two cases apart.
//   - Final times of a thread: the kernel frees a thread's accounting the
//     moment it exits, so they are the last times the handle saw, as of
//     its last query. A process's times still include every exited thread.
//
// Process.Wait and Thread.Wait block until the exit, with a context for
// cancellation, like WaitForSingleObject. They never reap a child, and a
// goroutine in Wait costs nothing while the task runs: it blocks until the
// exit watcher (or poller) records the exit.
//
// A handle dropped without Close gives back its pidfd, its kept-open files
// and its place in the exit watcher once the garbage collector finds it
// unreachable (runtime.AddCleanup; the watcher holds the handle's state,
// never the handle). A handle in Wait, or referenced, is never released.
//
// Access rights (Access) are checked when a handle is opened and by each
// query, as on Windows; the Access type documents how they map onto what
// Linux permits (hidepid, ptrace read access).
//
// A thread or process that vanishes during an enumeration is skipped, never
// reported as an error of the whole scan.
//
// # Cycle times
//
// Process.CycleTime, Thread.CycleTime and IdleProcessorCycleTimes answer
// QueryProcessCycleTime, QueryThreadCycleTime and
// QueryIdleProcessorCycleTime. As the Windows documentation says, do not
// convert cycle times to elapsed time. On Windows they are the native
// calls' answers, ticks of the time-stamp counter (TSC) on amd64, and
// ReferenceFrequency is the TSC's rate, stated by CPUID or calibrated once
// against QueryPerformanceCounter. On Linux, which keeps no per-task
// cycle count, they are reference cycles: the exact on-CPU nanoseconds
// that Times.Total reports, multiplied by ReferenceFrequency, the rate of
// the TSC on amd64 (stated by CPUID where the CPU or hypervisor states it,
// otherwise calibrated once against CLOCK_MONOTONIC_RAW, lazily, in about
// 40 ms) or of the generic timer (CNTFRQ_EL0) on arm64. They are not core
// cycles: frequency scaling, turbo and a busy sibling hyperthread are
// invisible in them. They never decrease, agree with Times to within one
// cycle, and include a process's exited threads. Idle cycles come from
// the cpuidle residency counters (microseconds) where a cpuidle driver is
// active, else from /proc/stat's idle and iowait (10 ms ticks). A
// CycleCounter counts real core cycles through perf_event_open, from the
// moment it is opened, where the machine has a PMU; virtual machines
// usually have none, and opening it then fails with ErrNotSupported
// saying so. Windows offers no unprivileged per-thread interface to the
// PMU, and there opening a CycleCounter always fails with ErrNotSupported.
//
// # Windows
//
// Every answer is the system's own. A Process or Thread is a Win32 handle
// opened by OpenProcess or OpenThread with the requested Access, unchanged;
// CurrentProcess and CurrentThread are the pseudo-handles of
// GetCurrentProcess and GetCurrentThread. Times is GetProcessTimes or
// GetThreadTimes; Wait is one WaitForMultipleObjects on the handle, an event
// that Close sets and one that the context's cancellation sets; Close is
// CloseHandle. The kernel keeps an exited task's object, with its exit time
// and exact final times, while a handle to it is open, and hands its id to
// no other task meanwhile: nothing needs watching, and the final times are
// the system's own, never the last ones seen.
//
// Precision: Windows counts kernel and user time in 100 ns units (FILETIME
// ticks) but advances them only at the clock interrupt, by one interval of
// the timer, normally 15.625 ms (less while some program raises the timer's
// rate), to the thread the interrupt finds running. A thread's times are
// therefore sampled, not exact, and a short burst of work may show as 0 or
// as a whole interval; process times are the sum over the threads. Creation
// and exit times are the system clock's at the event, to 100 ns. The cycle
// times, by contrast, are counted exactly: Windows reads the time-stamp
// counter at each context switch and charges the difference to the thread.
// Measure uses them where it can (below).
//
// Enumerations (Threads, AllThreads, Processes, ProcessInfoOf) read one
// snapshot of the whole system, NtQuerySystemInformation with
// SystemProcessInformation, which holds every process and thread with its
// times and needs no right on any of them: nothing is left out because a
// handle was refused. Thread names are not in it, and ThreadInfo.Name is
// empty; process names are the image names ("svchost.exe"). The Idle
// process (id 0) is not listed. If the system refuses the snapshot itself,
// the error wraps ErrAccessDenied.
//
// Errors of Win32 calls wrap both the sentinel and the Windows error code:
// errors.Is(err, ErrNotFound) and errors.Is(err, windows.ERROR_INVALID_PARAMETER)
// both hold for OpenProcess of an id no process has.
//
// # Goroutines and threads
//
// A goroutine is not a thread: CurrentThread and CurrentThreadID only mean
// something in a goroutine locked to its thread with runtime.LockOSThread.
// Measure (or StartRegion and Region.End) does that locking around a piece
// of Go code and reports the CPU time its thread used meanwhile: exact on
// Linux; on Windows exact to the cycle where the thread's cycle count and
// its rate are known (QueryThreadCycleTime ÷ ReferenceFrequency), else in
// whole clock-interrupt intervals. It counts only that thread, never work
// the code hands to other goroutines or the garbage collector's background
// workers.
package cputime
