// Package recorder records every process and thread of a process tree that
// cputime starts ("cputime run"), each with its creation time, exit time and
// final user and kernel times, including tasks that live for less than a
// millisecond, without privilege. It fills a timeline.Recording.
//
// On Linux it uses perf_event_open: one software task-clock counter per
// online CPU, opened on the child before CMD's first instruction, with
// inherit and inherit_stat so that every task the child creates gets
// counters of its own. The child first runs a stub of under 200 bytes that waits on a
// pipe while the counters are opened on it, then execs CMD; nothing is
// traced or stopped, and if cputime dies before the release the stub reads
// end-of-file and exits 125 without running CMD (stub_linux.go). The kernel
// then writes, into one ring buffer per CPU and without stopping anyone, a
// FORK record at each task's creation, a COMM record at each rename or exec,
// an EXIT record at each exit and, at each exit, a READ record with the
// task's own final count: its exact on-CPU time in nanoseconds, measured by
// the scheduler's clock. perf_event_paranoid 2 (the usual default) allows
// this for one's own children; the counters must exclude the kernel there,
// which does not change a task-clock count.
//
// The user/kernel split of each task's exact total follows account.Rule fed
// with the task's stat utime and stime ticks, the evidence the project uses
// for another process's thread, read every StatInterval while the task runs
// (unprivileged counters cannot tell user from kernel mode). The top
// process's main thread, still readable as a zombie when the recording
// stops, gets its final stat and schedstat, as any other reader would.
//
// The original counters (those opened on the top process) write no READ
// record at their task's exit, and the kernel's context-switch shortcut can
// move them to any task of the tree; their count is recovered at the end
// from the counters' totals less the READ records.
//
// Lost records (a ring buffer full when the kernel wrote) are counted from
// the kernel's LOST and LOST_SAMPLES records and reported, never silent; a
// thread whose final READ records did not all arrive is marked incomplete.
// The kernel's ring buffers expect one writing CPU each, but a task's exit
// writes a READ record into every CPU's buffer from the CPU it exits on.
// When two CPUs write one buffer at once the kernel can stop publishing
// that buffer's head for good (its records go on being written after it,
// and no LOST record says so), publish a head over a record not yet
// written, or write two records into the same space. The reader takes the
// records written past a head that has stopped moving (Stats.Unpublished),
// waits for a record's time to be written before taking it, and skips a
// stretch written over to the next record it can trust (Stats.Corrupt: a
// record or more lost there). See ring.drain.
//
// Elsewhere, and on Linux architectures without a stub (all but amd64 and
// arm64 for now), Start returns an error wrapping ErrNotSupported.
package recorder
