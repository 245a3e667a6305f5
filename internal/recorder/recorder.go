package recorder

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cputime/cputime/internal/timeline"
)

// ErrNotSupported is wrapped by Start where the platform or the system's
// settings do not allow recording (not Linux; no launcher for the
// architecture; perf_event_paranoid above 2; perf_event_open refused by a
// seccomp filter; memfds not executable).
var ErrNotSupported = errors.New("recording the process tree is not supported")

// Options tune a recording.
type Options struct {
	// Samples asks for each running task's CPU time every StatInterval,
	// the samples a timeline draws (timeline.Thread.Samples). Without
	// them, where the events watch every task (root), the reader wakes
	// only when a buffer is a quarter full or every 50 ms.
	Samples bool
	// Held, if set, is called with CMD's pid while the launcher holds its
	// process, before CMD's first instruction, on a goroutine of its own
	// while the counters open (Run moves the process into the tree's
	// cgroup there). Where it fails, the recorder samples the tree's
	// memory as with SampleMemory.
	Held func(pid int) error
	// SampleMemory asks for the tree's memory at its highest, sampled:
	// Stats.PeakRSS.
	SampleMemory bool

	// test, set only by this package's tests, changes how the recording
	// is made; nil changes nothing.
	test *testHooks
}

// testHooks are what this package's tests change in a recording
// (Options.test), each for that recording alone; set only by them.
type testHooks struct {
	// perfOnly makes the recording count with perf alone (openExits).
	perfOnly bool
	// perTaskOnly makes it use events inherited by the tree's tasks even
	// where the system-wide ones would do (openRings).
	perTaskOnly bool
	// ringPages, if not 0, is the size of each ring buffer it asks for,
	// in pages, the system-wide ones too (openAll).
	ringPages int
	// holdDrains holds the reader before each drain until it is closed:
	// the kernel's buffers fill meanwhile.
	holdDrains chan struct{}
	// beforeRelease is called with the launcher's pid once the counters
	// are open, before the launcher is let go.
	beforeRelease func(pid int)
}

// StatInterval is how often the recorder reads the stat and schedstat of
// every running task of the tree: the tick evidence for each task's
// user/kernel split, and the CPU samples the timeline draws.
const StatInterval = 50 * time.Millisecond

// Stats says how complete a recording is.
type Stats struct {
	// LostRecords is the number of records the kernel could not write
	// because a ring buffer was full (PERF_RECORD_LOST and
	// PERF_RECORD_LOST_SAMPLES). Zero means nothing was lost.
	LostRecords uint64
	// Incomplete is the number of exited threads whose final count did not
	// arrive whole (one READ record per CPU counter): their times are a
	// lower bound.
	Incomplete int
	// Running is the number of threads still running when the recording
	// stopped (descendants that outlived the top process): their times
	// were read from /proc then, their exit time is zero.
	Running int
	// Corrupt is the number of times a ring buffer held something that
	// was not a record of this recording, and the rest of it up to the
	// kernel's head was skipped (see ring.drain): records may be missing,
	// and the threads that lost a final count are marked incomplete.
	Corrupt uint64
	// SwitchFast is set where the kernel (before Linux 6.12) would not
	// turn off the swap of two clone tasks' counter contexts at a switch
	// between them: another perf user's counters on the same tasks can
	// then pair with the recording's in the swap and trade counts.
	SwitchFast bool
	// BufferBytes is the size of each ring buffer.
	BufferBytes int
	// SystemWide says the records of creation, names and exit came from
	// one event per CPU watching every task (root), not from events
	// inherited by each task of the tree.
	SystemWide bool
	// Source says where the exited tasks' final times come from:
	// "taskstats" (the kernel's exit records: root) or "perf" (the
	// task-clock counters' READ records); SourceNote says why not
	// taskstats.
	Source, SourceNote string
	// ExitsDropped is the number of exit records the kernel dropped
	// (taskstats: the socket's queue full).
	ExitsDropped uint64
	// Steal is the time the hypervisor took from the machine's CPUs
	// during the recording (/proc/stat), which perf's task clock counts
	// and the scheduler's leaves out.
	Steal time.Duration
	// Excess is how much the recorded tasks' times add up to more than
	// the tree's exact total, from 1 ms (CheckTree); 0 otherwise.
	Excess time.Duration
	// Shortfall is how much the recorded tasks' times add up to less than
	// the tree's exact total where they come from perf's clock, from 1
	// ms (CheckTree); 0 otherwise.
	Shortfall time.Duration
	// TreeFitted says the estimated parts of the final times were fitted
	// to the tree's exact total (FitTree).
	TreeFitted bool
	// Tick is the scheduler tick (a jiffy, from the coarse clock's
	// resolution): the most a thread's estimated part can be.
	Tick time.Duration
	// ExitUnseen is the number of tasks that exited without an EXIT record
	// (lost): their exit time is when their exit record arrived, or
	// unknown.
	ExitUnseen int
	// ExitOnly is the number of tasks of the tree seen only by their exit
	// record (taskstats): every perf record of theirs lost. They are not
	// in the recording.
	ExitOnly int
	// UnknownCreation is the number of tasks whose creation was not seen
	// (their FORK record lost).
	UnknownCreation int
	// ClockStep is how far the wall clock was stepped during the
	// recording (its offset from CLOCK_BOOTTIME at the end less at the
	// start); the instants are on the clock as it was at the end.
	ClockStep time.Duration
	// Problems says, in sentences with counts, why the recording is not
	// exact; empty means every task of the tree was recorded with exact
	// final times (Complete).
	Problems []string
	// PeakRSS is the most the tree held resident at once as sampled
	// (Options.SampleMemory), in KiB: the resident sets of the processes
	// with a task alive (/proc/PID/statm), added up every StatInterval,
	// at the highest sum; MemorySamples is how many sums were taken.
	PeakRSS       int64
	MemorySamples int
	// CPUs is the number of CPUs recorded (a ring buffer each with
	// taskstats, two without).
	CPUs int
}

// Complete says whether every task of the tree was recorded with its
// exact final times: nothing in Problems.
func (s Stats) Complete() bool { return len(s.Problems) == 0 }

// clockStepShown is the smallest clock step a recording reports: NTP's
// slewing moves the offset by microseconds, which no instant printed shows.
const clockStepShown = time.Millisecond

// problems says what s shows to be missing or inexact, one sentence each.
// top is the recorded command's pid.
func problems(s Stats, top int) []string {
	var p []string
	plural := func(n uint64, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	if s.LostRecords > 0 {
		p = append(p, fmt.Sprintf("the kernel dropped %s (a ring buffer was full): tasks may be missing from the record", plural(s.LostRecords, "perf record", "perf records")))
	}
	if s.Corrupt > 0 {
		p = append(p, fmt.Sprintf("a ring buffer held %s that were not records: tasks or final times may be missing", plural(s.Corrupt, "stretch", "stretches")))
	}
	if s.ExitsDropped > 0 && s.Incomplete > 0 {
		// Drops that cost the tree nothing (every exit on the machine is
		// queued, most of them other processes') are not a problem.
		p = append(p, fmt.Sprintf("the kernel dropped %s (taskstats queue full, every exit on the machine queued): the tree's threads without theirs have no final time", plural(s.ExitsDropped, "exit record", "exit records")))
	}
	if s.Incomplete > 0 {
		p = append(p, fmt.Sprintf("%s no exact final time: their times are a lower bound", plural(uint64(s.Incomplete), "exited thread has", "exited threads have")))
	}
	if s.Running > 0 {
		p = append(p, fmt.Sprintf("%s still running when process %d exited: their times are as of then, with no exit time", plural(uint64(s.Running), "thread was", "threads were"), top))
	}
	if s.ExitUnseen > 0 {
		p = append(p, fmt.Sprintf("the exit of %s was not seen (the kernel's record lost): exit time late or unknown", plural(uint64(s.ExitUnseen), "task", "tasks")))
	}
	if s.ExitOnly > 0 {
		p = append(p, fmt.Sprintf("%s of the tree were seen only by the kernel's exit record (its other records lost): not in the record", plural(uint64(s.ExitOnly), "task", "tasks")))
	}
	if s.UnknownCreation > 0 {
		p = append(p, fmt.Sprintf("the creation of %s was not seen: creation time unknown", plural(uint64(s.UnknownCreation), "task", "tasks")))
	}
	if s.Source == "perf" && s.Steal > 0 {
		p = append(p, fmt.Sprintf("the hypervisor took %v of CPU time from this machine during the recording: per-thread times come from perf's task clock, which counts stolen time that the threads' own CPU clocks leave out (exact final times need taskstats: %s)", s.Steal.Round(time.Millisecond), s.SourceNote))
	}
	if s.SwitchFast && s.Source == "perf" {
		p = append(p, "this kernel (before Linux 6.12) swaps the counters of two threads at a switch between them: had another perf user (perf stat, a profiler, a nested cputime run) counted these tasks, their per-thread times could be traded between threads, which the recording cannot see")
	}
	if s.ClockStep >= clockStepShown || s.ClockStep <= -clockStepShown {
		p = append(p, fmt.Sprintf("the wall clock was stepped by %v during the recording: creation and exit times are on the wall clock as it was at the end", s.ClockStep.Round(time.Millisecond)))
	}
	return p
}

// ShareSplit gives the threads of rec that had no tick evidence of their
// own (Thread.NoTicks: they lived between two reads of their stat, which
// perf alone leaves as all user time) a user/kernel split from the
// kernel's accounting of the whole tree: wait4's kernel time for the tree
// (kernel), less what the other threads' ticks account for, shared among
// them in proportion to their totals. Their totals do not change; each
// process's User and Kernel are summed again. user+kernel is the tree's
// total, as wait4 gives it.
func ShareSplit(rec *timeline.Recording, user, kernel time.Duration) {
	var known, pool time.Duration
	for _, p := range rec.Processes {
		for _, t := range p.Threads {
			if t.NoTicks {
				pool += t.User + t.Kernel
			} else {
				known += t.Kernel
			}
		}
	}
	if pool <= 0 || user+kernel <= 0 {
		return
	}
	left := min(max(kernel-known, 0), pool)
	for i := range rec.Processes {
		p := &rec.Processes[i]
		p.User, p.Kernel = 0, 0
		for j := range p.Threads {
			t := &p.Threads[j]
			if t.NoTicks {
				total := t.User + t.Kernel
				t.Kernel = time.Duration(float64(total) * float64(left) / float64(pool))
				t.User = total - t.Kernel
			}
			p.User += t.User
			p.Kernel += t.Kernel
		}
	}
}

// excessShown is the least Excess that CheckTree reports: perf's clock
// and the scheduler's part by microseconds at each switch, which add up to
// less than this over a recording.
const excessShown = time.Millisecond

// CheckTree compares a recording with the tree's exact total, as wait4
// gives it (total: the top process and every descendant reaped, which must
// be all of the recording's tasks: with any still running it does
// nothing), once FitTree or ShareSplit is done. With taskstats FitTree
// makes the recorded times add up to wait4's. More has two causes. A
// process of the tree ignored SIGCHLD: the kernel then adds none of its
// children to wait4's total, which the headline shows. Or, where the times
// come from perf's clock, it counted time the tasks' own CPU clocks leave
// out: time the hypervisor stole from the vCPU, which /proc/stat shows
// only in 10-ms steps, so that Steal can be 0 while the threads' figures
// hold some; or interrupt time, where the kernel accounts it apart. An
// excess of excessShown or more is set in st.Excess and named in
// st.Problems.
//
// Less, from perf's clock, is set in st.Shortfall and named from
// excessShown: perf's clock stops at each task's exit before the
// scheduler's does (the exit's address-space teardown: longer for a Go
// program than for a small C one), and on some virtual machines it runs
// slower than the scheduler's clock, which every CPU clock a task reads of
// itself and wait4 are (docs/figures.md has both). Either way the
// processes' figures are below their own, and the record says so. Excess
// and a shortfall can hide in each other: a tree whose sum comes out within
// 1 ms of wait4's may still hold both.
//
// It returns st.Excess.
func CheckTree(rec *timeline.Recording, st *Stats, total time.Duration) time.Duration {
	if rec == nil || st == nil || st.Source != "taskstats" && st.Source != "perf" || st.Running > 0 || total <= 0 {
		return 0 // not a recording of this package's (run's job on Windows has no tree total)
	}
	var sum time.Duration
	for _, p := range rec.Processes {
		sum += p.User + p.Kernel
	}
	if st.Source == "perf" && total-sum >= excessShown {
		st.Shortfall = total - sum
		st.Problems = append(st.Problems, fmt.Sprintf("the tasks' times add up to %v less than the kernel's total for the tree (wait4): perf's task clock, which they come from, stops at each task's exit before the scheduler's clock does, and on some virtual machines runs slower than it, so processes' times can be below their own by up to that much (exact final times need taskstats: %s)",
			st.Shortfall.Round(10*time.Microsecond), st.SourceNote))
	}
	if sum-total < excessShown {
		return 0
	}
	st.Excess = sum - total
	const sigchld = "a process of the tree ignored SIGCHLD and the kernel never added its children to wait4's total"
	if st.Source == "perf" {
		st.Problems = append(st.Problems, fmt.Sprintf("the tasks' times add up to %v more than the kernel's total for the tree (wait4): perf's task clock, which they come from, counted time their own CPU clocks leave out, stolen by the hypervisor (/proc/stat showed %v, in 10-ms steps) or taken by interrupts, or %s (exact final times need taskstats: %s)",
			st.Excess.Round(10*time.Microsecond), st.Steal.Round(time.Millisecond), sigchld, st.SourceNote))
	} else {
		st.Problems = append(st.Problems, fmt.Sprintf("the tasks' times add up to %v more than the kernel's total for the tree (wait4): %s, so the tree's total (wait4's) is low by that much", st.Excess.Round(10*time.Microsecond), sigchld))
	}
	return st.Excess
}

// FitTree fits the final times of the recorded threads to the tree's
// exact total as wait4 gives it (total: the top process and every
// descendant reaped, which must be all of the recording's tasks: with any
// still running it does nothing). With taskstats each exited thread's time
// is its exit record's sum_exec_runtime, exact as of its last tick or
// switch, and the top process's threads are already fitted to its own
// total; what the records leave of the tree's total is the other threads'
// stretches after their last ticks (each at most Thread.EstimateCap) and
// the processes' exits after every per-task hook (the address-space
// teardown). It is shared to one
// level, none beyond its cap; what the caps cannot hold goes in equal
// shares to each process's last thread. The recording then adds up to
// wait4's total; each thread's split keeps its ratio; st's TreeFitted is
// set. It returns whether it fitted.
func FitTree(rec *timeline.Recording, st *Stats, top int, total time.Duration) bool {
	if rec == nil || st == nil || st.Source != "taskstats" || st.Running > 0 || st.Incomplete > 0 || total <= 0 {
		return false
	}
	type ref struct{ p, t int }
	var fixed time.Duration
	var est []ref
	caps := map[ref]time.Duration{}
	var lasts []ref // each process's last thread to exit
	for i, p := range rec.Processes {
		last := -1
		for j, t := range p.Threads {
			fixed += t.User + t.Kernel
			if t.Exit.IsZero() {
				return false
			}
			if p.ID != top && t.EstimateCap > 0 {
				est = append(est, ref{i, j})
				caps[ref{i, j}] = t.EstimateCap
			}
			if last < 0 || t.Exit.After(p.Threads[last].Exit) {
				last = j
			}
		}
		if last >= 0 && p.ID != top {
			lasts = append(lasts, ref{i, last})
		}
	}
	budget := max(total-fixed, 0)
	var sum time.Duration
	for _, r := range est {
		sum += caps[r]
	}
	var got map[ref]time.Duration
	if sum > budget {
		got = level(est, caps, budget)
	} else {
		got = make(map[ref]time.Duration, len(est))
		for _, r := range est {
			got[r] = caps[r]
		}
		if len(lasts) > 0 {
			share := (budget - sum) / time.Duration(len(lasts))
			for _, r := range lasts {
				got[r] += share
			}
		}
	}
	for r, e := range got {
		t := &rec.Processes[r.p].Threads[r.t]
		old := t.User + t.Kernel
		now := old + e
		if old > 0 {
			t.Kernel = time.Duration(float64(t.Kernel) * float64(now) / float64(old))
		}
		t.User = now - t.Kernel
		t.Estimated += e
	}
	for i := range rec.Processes {
		p := &rec.Processes[i]
		p.User, p.Kernel = 0, 0
		for _, t := range p.Threads {
			p.User += t.User
			p.Kernel += t.Kernel
		}
	}
	st.TreeFitted = true
	return true
}

// level shares budget among keys, none beyond its cap, where the caps add
// up to more: the smallest caps are given whole, the rest one level that
// makes them add up to budget.
func level[K comparable, N ~int64 | ~uint64](keys []K, caps map[K]N, budget N) map[K]N {
	cs := make([]N, len(keys))
	for i, k := range keys {
		cs[i] = caps[k]
	}
	shares := levelCaps(cs, budget)
	out := make(map[K]N, len(keys))
	for i, k := range keys {
		out[k] = shares[i]
	}
	return out
}

// levelCaps is level over caps by index: the share of each, in order.
func levelCaps[N ~int64 | ~uint64](caps []N, budget N) []N {
	// Only the level is wanted, so a sorted copy of the caps is enough:
	// each share is its cap or the level, whichever is less. Sorting the
	// bare values (no index beside each, no comparison function) halved
	// fitTop's share-out, which the user waits for at the end of a
	// recording (BenchmarkWaterFill, 60,000 threads: 5.5 against 10.7 ms,
	// 2-vCPU VM).
	sorted := slices.Clone(caps)
	slices.Sort(sorted)
	left := budget
	lv := budget
	for i, c := range sorted {
		lv = left / N(len(sorted)-i)
		if c > lv {
			break
		}
		left -= c
	}
	out := make([]N, len(caps))
	for i, c := range caps {
		out[i] = min(c, lv)
	}
	return out
}
