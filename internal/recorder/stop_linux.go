package recorder

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/timeline"
)

// Stop ends the recording and returns it. Call it once the top process has
// exited and before it is reaped (after Wait on its pidfd, before
// Cmd.Wait): its main thread's final times are read from its zombie.
// Descendants still running are recorded as running, with their times so
// far.
func (r *Recorder) Stop() (*timeline.Recording, Stats, error) {
	if r.stopped {
		return nil, Stats{}, errors.New("recorder: Stop called twice")
	}
	r.stopped = true
	// The top process's main thread: its final stat and schedstat, from
	// its zombie, read into locals while the recording goroutine still
	// runs (it owns r.tasks until done), and stored once it has stopped, so
	// that no periodic sample overwrites them.
	dir := "/proc/" + strconv.Itoa(r.pid) + "/task/" + strconv.Itoa(r.pid) + "/"
	buf := make([]byte, 4096)
	var topErr error
	var topStat procfs.Stat
	var topSched procfs.Schedstat
	if topStat, topErr = readStatFile(dir+"stat", buf); topErr == nil {
		var b []byte
		if b, topErr = procfs.ReadFileInto(dir+"schedstat", buf[:0]); topErr == nil {
			topSched, topErr = procfs.ParseSchedstat(b)
		}
	}
	// The process's exact total, its exited threads' final runtimes
	// included (the process CPU clock of its zombie): what its threads'
	// final times must add up to.
	topTotal, _ := processCPU(r.pid)
	// And its raw tick samples, in ns (the process's VIRT and PROF clocks):
	// the main thread's split evidence below, where its stat file's
	// (cputime_adjust's output in 10-ms USER_HZ ticks) is 0 and 0 for any
	// thread under 10 ms, which Rule takes for all user.
	topUser, topSys, topTicksErr := kernel.ReadTicks(kernel.ProcessClock(r.pid, kernel.ClockProf))
	// The reading goroutine may be in a round: finish waits for it to end.
	r.finish()
	if top := r.tasks[r.pid]; top != nil && topErr == nil {
		// The process's main thread now: CMD's, or a thread that exec'd.
		top.utime, top.stime, top.count, top.fromZombie = topStat.UTime, topStat.STime, topSched.RunTime, true
	}
	end := time.Now()
	if r.exits != nil {
		r.exits.close()
	} else {
		r.settleOriginals()
	}
	if top := r.tasks[r.pid]; top != nil && top.fromZombie && topTicksErr == 0 {
		// Every exit record in by now.
		if u, k, ok := r.mainTicks(top, topUser, topSys); ok {
			top.utime, top.stime = u, k
		}
	}
	for _, x := range r.rings {
		x.close() // the reading goroutine, told to stop, reads them no more
	}
	for _, t := range r.live {
		r.closeFile(t)
	}
	if topErr != nil {
		return nil, Stats{}, fmt.Errorf("reading the final times of process %d: %w", r.pid, topErr)
	}
	stats := Stats{LostRecords: r.lost, CPUs: r.cpus(), SwitchFast: !r.noSwitchFast, BufferBytes: r.ringBytes,
		Source: "perf", SystemWide: r.system, ClockStep: time.Duration(account.BootOffset() - r.offset0),
		PeakRSS: r.memory.peak, MemorySamples: r.memory.n}
	for _, x := range r.rings {
		stats.Corrupt += x.Corrupt()
		stats.LostRecords += x.Lost()
	}
	if r.exits != nil {
		stats.Source = "taskstats"
		stats.ExitsDropped, _ = r.exits.state()
		stats.ExitOnly = r.exitOnly(stats.LostRecords > 0 || stats.Corrupt > 0)
	} else {
		stats.SourceNote = r.exitsErr.Error()
	}
	if steal := stealTicks(); steal > r.steal0 {
		stats.Steal = time.Duration(steal-r.steal0) * time.Second / time.Duration(clockTicks)
	}
	tick := tick()
	stats.Tick = time.Duration(tick)
	rec := &timeline.Recording{Start: r.start, End: end}
	// The top process was created a few µs after r.start: closer than its
	// stat start time (a 10 ms tick), and on the same clock as the other
	// tasks' fork records.
	topCreation := r.start
	r.fitTop(topTotal, tick)
	// One offset for every instant of the record: reading the clocks for
	// each would cost a microsecond per instant, and a step between two
	// would shift them apart (it is reported: ClockStep).
	offset := account.BootOffset()
	for _, p := range r.order {
		tp := timeline.Process{ID: p.pid, Parent: p.ppid, Threads: make([]timeline.Thread, 0, len(p.tasks))}
		if p.pid == r.pid {
			tp.Parent = 0
		}
		allExited := true
		for _, t := range p.tasks {
			th := timeline.Thread{ID: t.tid, Name: t.name, Samples: t.cum}
			switch {
			case t.top:
				th.Creation = topCreation
			case t.fork != 0:
				th.Creation = bootInstant(t.fork, offset)
			default:
				stats.UnknownCreation++
			}
			if !t.exited && !t.top && (t.gone || t.final != nil) {
				// Exited, its EXIT record lost: the exit time is when
				// its exit record was received (late by its delivery),
				// or unknown.
				stats.ExitUnseen++
				if t.final != nil {
					th.Exit = t.final.received
				}
				if !r.haveFinal(t) {
					stats.Incomplete++
					th.Incomplete = true
				}
			} else if t.exited {
				th.Exit = bootInstant(t.exit, offset)
				// The last look (the top process's zombie, read at the
				// end) can come after the exit: not a sample of its life.
				for len(th.Samples) > 0 && th.Samples[len(th.Samples)-1].At.After(th.Exit) {
					th.Samples = th.Samples[:len(th.Samples)-1]
				}
				if !t.fromZombie && !r.haveFinal(t) {
					stats.Incomplete++
					th.Incomplete = true
				}
			} else {
				allExited = false
				stats.Running++
			}
			ev := account.Evidence{UTime: t.utime, STime: t.stime, RTime: t.count}
			if t.final != nil && !t.fromZombie {
				// The kernel's own at the exit: sum_exec_runtime (as of
				// the last tick or switch) and the ticks of each mode,
				// in µs; the stretch after, fitted to the process's
				// exact total where it is known (fitTop), or to the
				// tree's later (FitTree).
				ev = account.Evidence{UTime: t.final.UTime, STime: t.final.STime, RTime: t.final.Total + t.fit, KThread: t.final.KThread}
				th.Estimated = time.Duration(t.fit)
				th.EstimateCap = time.Duration(r.stretchCap(t, tick))
			}
			u, k := account.Rule(ev)
			// Ticks seen only by the reads every StatInterval: a task
			// that lived between two has none (an exit record or the
			// zombie has the kernel's own, whatever they are).
			th.NoTicks = ev.UTime == 0 && ev.STime == 0 && ev.RTime > 0 && t.final == nil && !t.fromZombie
			th.User, th.Kernel = time.Duration(u), time.Duration(k)
			tp.User += th.User
			tp.Kernel += th.Kernel
			if th.Exit.After(tp.Exit) {
				tp.Exit = th.Exit
			}
			tp.Threads = append(tp.Threads, th)
		}
		if !allExited {
			tp.Exit = time.Time{}
		}
		leader := p.tasks[0]
		for _, t := range p.tasks {
			if t.tid == p.pid {
				leader = t
				if t.fork != 0 {
					tp.Creation = bootInstant(t.fork, offset)
				}
				if t.top {
					tp.Creation = topCreation
				}
				break
			}
		}
		tp.Name = leader.name
		for _, t := range p.tasks {
			if t.tid == p.pid {
				tp.Name = t.name // the latest main thread's: after an exec by another thread, the new one's
			}
		}
		if tp.Creation.IsZero() || leader.tid != p.pid {
			tp.Creation = tp.Threads[0].Creation
		}
		// Nearly always in order already (by their FORK records), and
		// the check is cheaper than a stable sort of a list in order.
		byCreation := func(a, b timeline.Thread) int { return a.Creation.Compare(b.Creation) }
		if !slices.IsSortedFunc(tp.Threads, byCreation) {
			slices.SortStableFunc(tp.Threads, byCreation)
		}
		rec.Processes = append(rec.Processes, tp)
	}
	stats.Problems = problems(stats, r.pid)
	return rec, stats, nil
}

// Close releases what a recording holds if Stop was not called (an error
// path); it does not wait for the process.
func (r *Recorder) Close() error {
	if r == nil || r.stopped {
		return nil
	}
	r.stopped = true
	r.owner.Lock()
	close(r.stop)
	r.wakeLoop()
	r.owner.Unlock()
	<-r.done
	if r.exits != nil {
		r.exits.close()
	}
	for _, x := range r.rings {
		x.close()
	}
	for _, t := range r.live {
		r.closeFile(t)
	}
	return nil
}

// bootInstant converts a CLOCK_BOOTTIME reading to the wall-clock instant,
// with the process's one boot offset (account.BootOffset).
func bootInstant(ns uint64, offset int64) time.Time {
	return time.Unix(0, int64(ns)+offset)
}

// exitOnly counts the tasks of the tree that no perf record named, from
// the exit records still waiting at the end: possible only where records
// were lost, for every task the tree creates has a FORK record (its
// events are inherited, or watch every CPU). Without a loss, every exit
// record still waiting is another process's, even one whose pid and
// parent's pid the tree had both used (freed, or steered back by a
// neighbour).
func (r *Recorder) exitOnly(lost bool) int {
	if !lost {
		return 0
	}
	n := 0
	for _, e := range r.waitingAll() {
		// Its process and its parent are the tree's (a pid reused outside
		// the tree has, most often, a parent outside it).
		if r.procs[int(e.TGID)] != nil && (r.procs[int(e.PPID)] != nil || int(e.TGID) == r.pid) {
			n++
		}
	}
	return n
}
