// Package recorder records every process and thread of a process tree that
// cputime starts ("cputime run"), each with its creation time, exit time and
// final user and kernel times, including tasks that live for less than a
// millisecond, and says what it could not record (Stats.Problems). It fills
// a timeline.Recording.
//
// Run is the whole of "cputime run" but its output: it starts a command,
// records its tree (or, on Windows, runs it in a job object of its own),
// passes on the signals the caller catches, reaps the orphans it adopts as
// the tree's subreaper, and returns the record with the command's status.
//
// On Linux the child first runs a launcher of under 200 bytes that waits on
// a pipe (launcher_linux.go); the recorder opens perf counters on it for
// each online CPU, with inherit, so that every task the child creates gets
// counters of its own, maps each counter's ring buffer and lets the
// launcher exec CMD, so the counters are there before CMD's first
// instruction. Nothing is traced or stopped; if cputime dies before the
// release, the launcher reads end-of-file and exits 125 without running
// CMD. From then on no task stops:
//
//   - a dummy event's buffer gets a FORK record at each creation, a COMM
//     record at each rename or exec and an EXIT record at each exit, each
//     written by the CPU where it happens;
//   - without taskstats (below), a task-clock counter with inherit_stat
//     gets, at each task's exit, a READ record with the task's count on
//     that CPU, written from the CPU the task exits on under the parent
//     counter's child_mutex.
//
// So each buffer has one writer at a time, which is what the kernel's ring
// buffer is built for (its space is reserved with CPU-local atomics and its
// head published through a per-buffer nesting count). One buffer holding
// both kinds, as this package had before, has two: records were lost,
// written into one space, or written past a head the kernel stopped
// publishing, and a reader that took a header equal to the last lap's for
// one not yet written lost whole laps once a buffer wrapped. The counters
// set PERF_SAMPLE_READ (Linux 6.12 on), which with inherit turns off the
// kernel's swap of two clone tasks' counter contexts: the swap pairs
// counters by list position, and another perf user's counters on the same
// tasks (perf stat, a nested recording) would take the place of ours.
//
// Final times: where the process may listen to taskstats (CAP_NET_ADMIN in
// the initial namespaces), each task's exit record carries sum_exec_runtime,
// the scheduler's exact clock as of the task's last tick or switch, and its
// user and kernel ticks, the kernel's own evidence for the split; what the
// records leave of two exact totals (the top process's zombie clock here,
// the tree's wait4 in FitTree) is shared out within what each thread could
// have run after its last tick. No perf clock enters. Records come for
// every exit on the machine: one is a tree task's where its ids are and the
// parent it names created the task's process, or is the one the task's
// perf EXIT record names (an orphan's reaper), so that a process outside
// the tree that took a pid the tree freed keeps its own; and, as they come
// in the order of the exits, of two tree tasks with the same ids the
// earlier gets the earlier record. Without taskstats,
// the READ records are the final times, by perf's task clock, which also
// counts time stolen by a hypervisor and interrupt time; the split comes
// from each task's stat ticks, read every StatInterval while it runs
// (ShareSplit gives the tasks without any their share of the tree's). The
// top process's main thread is read from its zombie.
//
// Completeness: LOST records, READ records missing for a task, tasks whose
// FORK or EXIT was not seen (the kernel writes its LOST record only before
// a later record that fits, so a loss at the very end shows only this way),
// dropped taskstats records a task needed, descendants still running, steal seen in
// /proc/stat while perf's clock was a source, and a wall-clock step each
// add a sentence to Stats.Problems; Stats.Complete is true only when there
// is none. Once the tree is reaped, CheckTree adds one more where the
// tasks add up to more than wait4's total (a process ignored SIGCHLD; with
// perf's clock, time the tasks' own clocks leave out).
//
// Memory: Run makes a memory cgroup for the tree under cputime's own where
// it may (root, or a delegated subtree; cgroup v2 where cputime's cgroup
// hands the memory controller down, else v1) and moves CMD's process into it while the
// launcher holds it (Options.Held), so every task of the tree is born in
// it; once the tree is reaped it reads the cgroup's high-water mark
// (memory.peak, memory.max_usage_in_bytes) and removes it, moving orphans
// still running back to cputime's cgroup (treeCgroup). Elsewhere the
// recorder adds up the tree's resident sets every StatInterval
// (Options.SampleMemory, Stats.PeakRSS), and Run names that peak an
// estimate in Stats.Problems (Result.Memory).
//
// Elsewhere, and on Linux architectures without a launcher (all but amd64 and
// arm64 for now), Start returns an error wrapping ErrNotSupported.
package recorder
