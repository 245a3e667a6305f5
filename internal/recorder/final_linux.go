package recorder

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/timeline"
)

// readStats reads the stat of every thread not yet seen to exit: the tick
// evidence for its split. At the end (final) the threads still running
// (descendants that outlived the top process) get their schedstat read
// too, as their times so far.
func (r *Recorder) readStats(final bool) {
	r.lastStat = time.Now()
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	for _, t := range r.live {
		dir := "/proc/" + strconv.Itoa(t.pid) + "/task/" + strconv.Itoa(t.tid) + "/"
		var st procfs.Stat
		var err error
		if t.file == nil && r.kept < maxKeptFiles {
			if t.file, err = procfs.OpenFile(dir + "stat"); err == nil {
				r.kept++
				if t.sched, err = procfs.OpenFile(dir + "schedstat"); err == nil {
					r.kept++
				}
			}
		}
		if t.file != nil {
			var k int
			if k, err = t.file.ReadAt0(r.buf); err == nil {
				st, err = procfs.ParseStat(r.buf[:k])
			}
		} else {
			st, err = readStatFile(dir+"stat", r.buf)
		}
		if err != nil {
			// Exited meanwhile: its EXIT record is on its way, or, at
			// the end, was lost.
			t.gone = final
			continue
		}
		if st.UTime >= t.utime && st.STime >= t.stime {
			t.utime, t.stime = st.UTime, st.STime
		}
		var b []byte
		if t.sched != nil {
			var k int
			if k, err = t.sched.ReadAt0(r.buf); err == nil {
				b = r.buf[:k]
			}
		} else {
			b, err = procfs.ReadFileInto(dir+"schedstat", r.buf[:0])
		}
		if err != nil {
			continue
		}
		s, err := procfs.ParseSchedstat(b)
		if err != nil {
			continue
		}
		if n := len(t.cum); n == 0 || s.RunTime > uint64(t.cum[n-1].CPU) {
			t.cum = append(t.cum, timeline.Sample{At: time.Now(), CPU: time.Duration(s.RunTime)})
		}
		if final && !t.top {
			t.count = s.RunTime // still running: its times so far
		}
	}
}

func readStatFile(path string, buf []byte) (procfs.Stat, error) {
	b, err := procfs.ReadFileInto(path, buf[:0])
	if err != nil {
		return procfs.Stat{}, err
	}
	return procfs.ParseStat(b)
}

// settleOriginals gives the original counters' count to the task that held
// them when it exited. The kernel swaps two tasks' counter contexts at a
// switch between them when they are clones of one another (a shortcut that
// keeps the counts exact: nothing is switched out or in); inherit_stat
// swaps the counts back, so each count stays with its task, but the
// original counters (the ones opened on the top process) can end on any
// task of the tree, and an original writes no READ record at its exit.
// Their count is each counter's total less every READ that came through
// its buffer. The holder is the one exited task with no READ record; if
// it is the top process's main thread (as without any swap), its times
// come from its zombie anyway. Tasks still running (descendants that
// outlive CMD) have their counts in the totals too: their schedstat, read
// a moment before, is taken out, which leaves the holder's figure off by
// what they ran in between (µs). Where the holder is ambiguous (several
// exited tasks without READ), nothing is assigned and they count as
// incomplete.
func (r *Recorder) settleOriginals() {
	var leftover uint64
	for _, x := range r.rings {
		if x.kind != ringCounts {
			continue
		}
		t, err := x.total()
		if err != nil || t < x.readSum {
			return
		}
		leftover += t - x.readSum
	}
	var holder *task
	var running uint64
	for t := range r.allTasks() {
		switch {
		case !t.exited:
			// Its count so far is in the totals: take out what its
			// schedstat said a moment ago (readStats, just before).
			running += t.count
			continue
		case t.reads > 0:
			continue
		case t.top && t == r.tasks[r.pid]:
			return // its times come from its zombie
		case holder != nil:
			return
		}
		holder = t
	}
	if holder != nil {
		holder.count = leftover - min(leftover, running)
		holder.reads = r.cpus()
	}
}

// haveFinal says whether the exited task t has its final count: its exit
// record, or every CPU's READ record.
func (r *Recorder) haveFinal(t *task) bool {
	return t.final != nil || t.reads >= r.cpus()
}

// processCPU reads process pid's CPU clock (CPUCLOCK_SCHED): the exact
// runtime of all its threads, exited ones included; a zombie's is final.
func processCPU(pid int) (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(kernel.ProcessClock(pid, kernel.ClockSched), &ts); err != nil {
		return 0, err
	}
	return uint64(ts.Nano()), nil
}

// mainTicks gives the top process's main thread (main, read from the
// zombie) the tick samples it had, in ns, from the process's (user, sys:
// its VIRT and PROF clocks, every thread's samples, exited ones'
// included): the process's own where main is its only thread, or less
// every other thread's exit record (taskstats: its samples in µs) where
// each has one. Where a record is missing it reports false, and the main
// thread keeps its stat file's ticks. The same samples make the process's
// split (the root package's), so that a single-threaded process and its
// thread are split alike, which their stat files' 10-ms ticks could not
// do for a task of a few ms (the process all kernel, its thread all user).
func (r *Recorder) mainTicks(main *task, user, sys uint64) (u, k uint64, ok bool) {
	p := r.procs[r.pid]
	if p == nil {
		return 0, 0, false
	}
	for _, t := range p.tasks {
		if t == main {
			continue
		}
		if t.final == nil || t.fromZombie {
			return 0, 0, false
		}
		u, k := t.final.UTime*1000, t.final.STime*1000
		user, sys = user-min(user, u), sys-min(sys, k)
	}
	return user, sys, true
}

// stretchCap bounds the stretch of the exited task t's life after its
// exit record's sum_exec_runtime (its last tick or switch): no more than
// the time from the last tick before its exit to its exit (each tick
// brings the running task's sum_exec_runtime up to date), nor than its
// life, nor than a tick.
func (r *Recorder) stretchCap(t *task, tick uint64) uint64 {
	c := min(tick, r.grid.sinceTick(t.exit))
	if t.fork != 0 && t.exit > t.fork {
		c = min(c, t.exit-t.fork)
	}
	return c
}

// fitTop fits the final times of the top process's exited threads to the
// process's exact total (topTotal, 0 if unknown). Each thread's exit record
// is exact up to its last tick or switch; what the records leave to the
// total is the stretches after them (each at most stretchCap) and the
// exits' last instants. It is shared out by waterFill: to one level, none
// beyond its cap, and what the caps cannot hold in equal shares. Each
// thread's share goes to its fit.
func (r *Recorder) fitTop(topTotal, tick uint64) {
	var top *proc
	for _, p := range r.order {
		if p.pid == r.pid {
			top = p
			break
		}
	}
	if topTotal == 0 || top == nil || r.exits == nil {
		return
	}
	var fixed uint64
	fit := make([]*task, 0, len(top.tasks))
	caps := make([]uint64, 0, len(top.tasks))
	for _, t := range top.tasks {
		if t.final == nil || t.fromZombie {
			fixed += t.count
			continue
		}
		fixed += t.final.Total
		caps = append(caps, r.stretchCap(t, tick))
		fit = append(fit, t)
	}
	if len(fit) == 0 || topTotal <= fixed {
		return
	}
	for i, s := range waterFill(caps, topTotal-fixed) {
		fit[i].fit = s
	}
}

// waterFill shares budget among tasks that want each at most want[i]: the
// largest wants are cut to one level that makes them add up to budget; if
// all of them add up to less, each gets its want and an equal share of the
// rest. It returns the shares in want's order.
func waterFill(want []uint64, budget uint64) []uint64 {
	var sum uint64
	for _, w := range want {
		sum += w
	}
	if sum > budget {
		return levelCaps(want, budget)
	}
	out := make([]uint64, len(want))
	extra := (budget - sum) / uint64(len(want))
	for i, w := range want {
		out[i] = w + extra
	}
	return out
}

// tickGrid is when the scheduler ticks: every CPU that runs a task ticks
// at the same instants (no skew_tick, the default), the jiffy grid, which
// the coarse clock reports as its last reading.
type tickGrid struct {
	tick  uint64 // ns
	phase uint64 // a tick's instant modulo tick, CLOCK_BOOTTIME
	ok    bool
}

// tickSlack is how late after its instant a tick may update a task: the
// tick's handler runs a few µs after the grid point; a task that exited
// within this of a grid point is given the tick before it too.
const tickSlack = 200 * time.Microsecond

func readTickGrid() tickGrid {
	g := tickGrid{tick: tick()}
	var coarse, mono, boot unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &coarse) != nil ||
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil || unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil {
		return g
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/nohz_full"); err == nil && len(bytes.TrimSpace(b)) > 0 && string(bytes.TrimSpace(b)) != "(null)" {
		return g // tickless CPUs: a running task may get no tick
	}
	at := uint64(coarse.Nano() + boot.Nano() - mono.Nano())
	g.phase, g.ok = at%g.tick, true
	return g
}

// sinceTick bounds the stretch of a task that exited at exit (its EXIT
// record, CLOCK_BOOTTIME) since its last update: the time since the last
// tick before it, or one tick where the grid is unknown.
func (g tickGrid) sinceTick(exit uint64) uint64 {
	if !g.ok || exit < g.tick {
		return g.tick
	}
	d := (exit + g.tick - g.phase) % g.tick // since the grid point before exit
	if d < uint64(tickSlack) {
		d += g.tick
	}
	return d
}

// tick is the scheduler tick (a jiffy) in ns: the resolution of the
// coarse clocks, which advance once a tick; 10 ms (HZ=100, the longest)
// where it cannot be read.
func tick() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil || ts.Nano() <= 0 || ts.Nano() > int64(10*time.Millisecond) {
		return uint64(10 * time.Millisecond)
	}
	return uint64(ts.Nano())
}
