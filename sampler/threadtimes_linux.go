package sampler

import (
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

// readThreadTimes is readThread, its identity settled or bound by a file.
func (st *state) readThreadTimes(p *proc, t *thread, dst *Sample) readStatus {
	if t.zombie {
		// An exited main thread, awaiting its disappearance. A zombie
		// never lives again: if its id reads a live task, a thread that
		// called exec took it (see sameTask).
		switch r := st.readThreadStat(p, t, dst, false); {
		case r != readOK:
			return r
		case t.state != 'Z' && t.state != 'X':
			return st.replaced(p, t)
		}
		return readOK
	}
	b, err := st.readFile(t.schedfd, p.taskfd, t.tid, "schedstat")
	if err != nil {
		if gone(err) {
			return readGone
		}
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	ss, err := procfs.ParseSchedstat(b)
	if err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	// Only the main thread's id can change hands under a kept-open file;
	// any id read by name can (see sameTask).
	if t.reported && (t.tid == p.pid || t.schedfd < 0) && !st.sameTask(t, ss) {
		return st.replaced(p, t)
	}
	t.wait, t.slices, t.readAt = ss.WaitTime, ss.Timeslices, st.mono
	if ss.RunTime == t.runtime && t.reported {
		if t.tid == p.pid {
			if r := st.readThreadStat(p, t, dst, false); r != readOK {
				return r
			}
			if t.state == 'Z' || t.state == 'X' {
				st.threadExited(p, t, dst, time.Now())
				t.zombie = true
				return readOK
			}
		}
		t.lastAlive = st.now
		t.out = st.gen
		return readOK
	}
	if !t.fresh { // stat was read at open, just now
		if r := st.readThreadStat(p, t, dst, false); r != readOK {
			return r
		}
	}
	t.fresh = false
	s := st.stat
	e := account.Evidence{UTime: s.UTime, STime: s.STime, RTime: ss.RunTime, KThread: t.kthread}
	if p.pid == selfPID {
		// Our own threads: their thread CPU clocks, exact to the
		// nanosecond; the schedstat read after them proves the tid was
		// still this thread's.
		base := threadClock(t.tid)
		if e.UTime, e.STime, err = st.ticks(base); err == nil {
			e.RTime, err = st.clock(base | cpuclockSched)
		}
		if err == nil {
			_, err = st.readFile(t.schedfd, p.taskfd, t.tid, "schedstat")
		}
		if err != nil {
			return readGone
		}
	}
	if err := st.check(e, t.start, false); err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	t.user, t.ker = t.split.Adjust(e)
	t.runtime = ss.RunTime
	st.creation(t.start, &t.creation, &t.credOff)
	if t.state == 'Z' || t.state == 'X' {
		if t.reported {
			st.threadExited(p, t, dst, time.Now())
		}
		t.zombie = true
		return readOK
	}
	t.lastAlive = st.now
	t.out = st.gen
	return readOK
}

// tickSlack is how far a schedstat run time can lag behind the thread's
// use of the CPU: the kernel adds a running thread's time at each
// scheduler tick and switch, and a tick lasts at most 10 ms (HZ >= 100).
const tickSlack = 10 * time.Millisecond

// sameTask reports whether ss can be a later reading of the task t was
// last read from: each counter of a task only grows, and its run time by
// no more than the time between the two reads (one CPU), give or take one
// tick of lag. A kept-open file is bound to its tid's kernel pid, which
// one event hands to another task: a thread other than the main one calls
// exec, and the kernel gives it the main thread's id (de_thread swaps the
// two tasks' pids and releases the old main thread, whose start time the
// new one takes). Read by name (over budget), a reused tid names another
// task too. Either way the counters jump or go back, except where the new
// task's run time lies within one interval of the old one's: then the
// sampler cannot tell, and credits the difference (at most one CPU) to the
// old entry.
func (st *state) sameTask(t *thread, ss procfs.Schedstat) bool {
	if ss.RunTime < t.runtime || ss.WaitTime < t.wait || ss.Timeslices < t.slices {
		return false
	}
	grew := int64(ss.RunTime - t.runtime)
	if grew <= st.mono-t.readAt+int64(tickSlack) {
		return true
	}
	// The read was later than the refresh's start: bound it by now.
	since := st.clocks.Mono() - t.readAt
	return grew <= since+since/1000+int64(tickSlack)
}

// replaced handles a thread whose id names another task now: the main
// thread's, after an exec in another thread, or a reused tid read by name.
// The caller ends t and opens the id anew; the new task's entry continues
// the thread that called exec (see continueExec).
func (st *state) replaced(p *proc, t *thread) readStatus {
	if t.tid == p.pid {
		return readReplaced
	}
	return readGone
}
