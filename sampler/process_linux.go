package sampler

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// proc is one process, bound to its task by its kept-open stat file (and
// its pidfd, if any): a reused pid gets a new proc, never this one.
type proc struct {
	pid       int
	statfd    int // /proc/PID/stat, or -1 when over budget (identity by start time)
	pidfd     int // -1 without one
	taskfd    int // /proc/PID/task, with Options.Threads and a matching name; else -1
	start     uint64
	creation  time.Time
	credOff   int64 // the offset creation was computed with
	name      string
	state     byte
	kthread   bool
	nthreads  int
	matched   bool
	reported  bool   // in the samples of an earlier refresh
	zombie    bool   // reported exited; kept only so the listing does not see it as new
	seen      uint32 // generation of the last refresh that found it
	out       uint32 // generation of the last refresh that reports it
	split     account.Split
	rtime     uint64 // SCHED clock at the last read
	total     uint64 // user + kernel last reported
	user, ker uint64
	lastAlive time.Time
	exitNs    atomic.Int64 // the watcher's wake instant, Unix ns; 0 until then
	threads   map[int]*thread
	torder    []*thread
	tdirty    bool
	// threadsKnown says every thread was read at the last refresh and is
	// all there is (readKnown), with the process's SCHED clock at threadsAt
	// read before them: see keepThreads.
	threadsKnown bool
	threadsAt    uint64
	replaced     bool   // the main thread's id named another task in this refresh
	ino          uint64 // pidfs inode of its pid, without statfd and pidfd (Engine.SameTask); 0 if unknown
}

func (p *proc) task(first bool) Task {
	t := Task{
		PID: p.pid, Name: p.name, State: p.state, KernelThread: p.kthread, Threads: p.nthreads,
		Times: cputime.Times{Creation: p.creation, User: time.Duration(p.user), Kernel: time.Duration(p.ker)},
	}
	if !first {
		if p.reported {
			t.Delta = time.Duration(p.user + p.ker - p.total)
		} else {
			t.Delta = time.Duration(p.user + p.ker)
			t.New = true
		}
	}
	p.total = p.user + p.ker
	return t
}

// creation dates a start time, recomputed only when the offset changed
// (a clock step).
func (st *state) creation(start uint64, c *time.Time, off *int64) {
	if !c.IsZero() && *off == st.offset {
		return
	}
	*c = account.Creation(start, st.offset)
	*off = st.offset
}

// readStatus is the outcome of reading a task.
type readStatus uint8

const (
	readOK       readStatus = iota
	readGone                // exited and reaped (or the id names another task now)
	readReplaced            // the main thread's id names another task: an exec in another thread took it
	readFailed              // an error for this refresh, recorded in Sample.Errors
)

// openProc starts tracking process pid; nil if it is not there (or cannot
// be read, the error recorded where the caller named this pid).
func (st *state) openProc(pid int, dst *Sample, first bool) *proc {
	var name [24]byte
	path := append(strconv.AppendInt(name[:0], int64(pid), 10), "/stat"...)
	p := &proc{pid: pid, statfd: -1, pidfd: -1, taskfd: -1}
	fd, err := st.openAt(st.procfd, path, 0, 0)
	if err != nil {
		if !gone(err) && len(st.opts.PIDs) > 0 {
			dst.Errors = append(dst.Errors, taskError(pid, 0, err))
		}
		if errors.Is(err, os.ErrPermission) {
			st.denied(pid, dst)
		}
		return nil
	}
	p.statfd = fd
	if fd < 0 && !st.eng.SameTask(pid, false, &p.ino) {
		return nil // learned before the reads, checked after them (readProc)
	}
	if st.watch != nil && st.files+1 <= st.budget {
		if pfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
			p.pidfd = pfd
			st.files++
		}
	}
	st.procs[pid] = p
	st.dirty = true
	// The stat read after pidfd_open proves the pidfd is this task's: the
	// stat file is bound to the task, and the pid could not have been
	// reused while the task was there.
	if st.readProcStat(p, dst, true) != readOK {
		st.dropProc(p)
		return nil
	}
	if p.pidfd >= 0 {
		exitNs := &p.exitNs
		if st.watch.Watch(p.pidfd, func(at time.Time) { exitNs.CompareAndSwap(0, at.UnixNano()) }) != nil {
			st.closeFD(&p.pidfd)
		}
	}
	if !st.readProc(p, dst, first) {
		return nil
	}
	return p
}

// readProcStat reads the stat file of p: when it is opened, when its times
// moved, and as the identity check where there is no pidfd.
func (st *state) readProcStat(p *proc, dst *Sample, open bool) readStatus {
	b, err := st.readFile(p.statfd, st.procfd, p.pid, "stat")
	if err != nil {
		if gone(err) {
			return readGone
		}
		if open && errors.Is(err, os.ErrPermission) {
			st.denied(p.pid, dst)
			if len(st.opts.PIDs) == 0 {
				return readFailed // not an error of the sample, but counted
			}
		}
		dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
		return readFailed
	}
	s, err := procfs.ParseStat(b)
	if err == nil && open {
		err = st.clocks.CheckStart(s.StartTime, st.offset)
	}
	if err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
		return readFailed
	}
	if open {
		p.start = s.StartTime
		p.kthread = s.Flags&account.PFKthread != 0
		st.creation(p.start, &p.creation, &p.credOff)
	} else if p.statfd < 0 && s.StartTime != p.start {
		return readGone // read by name, and the pid names another task now
	}
	if open || string(s.Comm) != p.name {
		p.name = string(s.Comm)
		matched := st.opts.Match == nil || st.opts.Match(p.name)
		if matched != p.matched {
			p.matched = matched
			p.reported = false // (re)appears as new, or leaves quietly
		}
	}
	p.state = s.State
	p.nthreads = s.NumThreads
	return readOK
}

// stillOurs reports whether p's pid still names p's task, after reads by
// pid and by name with no stat file kept: its pidfd has not seen it
// reaped, or (without one) its pidfs inode is the same (Engine.SameTask).
func (st *state) stillOurs(p *proc) bool {
	if p.pidfd >= 0 {
		state, err := kernel.PidfdState(p.pidfd)
		return err == nil && state != kernel.TaskGone
	}
	return st.eng.SameTask(p.pid, false, &p.ino)
}

// denied adds process pid, whose files may not be read, to dst.Denied with
// what its CPU clocks say: they need no permission.
func (st *state) denied(pid int, dst *Sample) {
	t := Task{PID: pid}
	base := processClock(pid)
	if rtime, err := st.clock(base | cpuclockSched); err == nil {
		if utime, stime, err := st.ticks(base); err == nil {
			u, k := account.Rule(account.Evidence{UTime: utime, STime: stime, RTime: rtime})
			t.Times.User, t.Times.Kernel = time.Duration(u), time.Duration(k)
		}
	} else if gone(err) {
		return
	}
	dst.Denied = append(dst.Denied, t)
}

// procGone reports p exited (if it was reported alive before) and forgets it.
func (st *state) procGone(p *proc, dst *Sample) {
	if p.reported && !p.zombie && p.matched {
		st.exitProc(p, dst, time.Now(), false)
	}
	st.dropProc(p)
}

// exitProc adds p (and its threads) to the exited tasks, last seen at
// p.lastAlive and known gone at goneAt. final says p's times were read
// after its exit (a zombie): its Delta counts.
func (st *state) exitProc(p *proc, dst *Sample, goneAt time.Time, final bool) {
	st.creation(p.start, &p.creation, &p.credOff)
	e := Exited{Task: p.task(false), LastSeen: p.lastAlive, GoneAt: goneAt, Final: final}
	e.New = false
	if !final {
		e.Delta = 0
	}
	if ns := p.exitNs.Load(); ns != 0 {
		// The watcher's wake instant, clamped into the bracket the reads
		// established (the clocks' readings differ by nanoseconds).
		e.Times.Exit = time.Unix(0, ns)
		e.Times.ExitSource = cputime.ExitObserved
		if e.Times.Exit.Before(e.LastSeen) {
			e.Times.Exit = e.LastSeen
		}
		if e.Times.Exit.After(e.GoneAt) {
			e.Times.Exit = e.GoneAt
		}
	}
	dst.ExitedProcesses = append(dst.ExitedProcesses, e)
	for _, t := range p.torder {
		if t.reported && !t.zombie {
			st.creation(t.start, &t.creation, &t.credOff)
			te := Exited{Task: t.task(p, false), LastSeen: t.lastAlive, GoneAt: e.GoneAt}
			te.New, te.Delta = false, 0
			te.Times.Exit, te.Times.ExitSource = e.Times.Exit, e.Times.ExitSource
			dst.ExitedThreads = append(dst.ExitedThreads, te)
		}
	}
}

// readProc reads p's times (and its threads'). It returns false if p was
// found gone and dropped; p is reported in this refresh if p.out is set.
func (st *state) readProc(p *proc, dst *Sample, first bool) bool {
	if p.zombie {
		// Exited and reported: only its disappearance is awaited.
		if _, err := st.readFile(p.statfd, st.procfd, p.pid, "stat"); err != nil && gone(err) {
			st.dropProc(p)
			return false
		}
		return true
	}
	clock := p.pid
	if p.pid == selfPID {
		clock = 0
	}
	base := processClock(clock)
	rtime, err := st.clock(base | cpuclockSched)
	if err != nil {
		st.procGone(p, dst)
		return false
	}
	if st.afterProcClock != nil {
		st.afterProcClock(p.pid)
	}
	moved := rtime != p.rtime || !p.reported
	var utime, stime uint64
	if moved && p.matched {
		if utime, stime, err = st.ticks(base); err != nil {
			st.procGone(p, dst)
			return false
		}
	}
	// The identity check after the clock reads, which went by pid: the
	// pidfd (or the kept-open stat file) still has our task, so the pid
	// was ours when the clocks were read.
	exited := false
	if p.pidfd >= 0 && !moved {
		switch state, err := kernel.PidfdState(p.pidfd); {
		case err != nil || state == kernel.TaskGone:
			st.procGone(p, dst)
			return false
		case state == kernel.TaskExited:
			exited = true
		}
	} else {
		switch st.readProcStat(p, dst, false) {
		case readGone:
			st.procGone(p, dst)
			return false
		case readFailed:
			return true
		}
		if p.statfd < 0 && !st.stillOurs(p) {
			st.procGone(p, dst) // read by name, and the pid names another task now
			return false
		}
		// The stat file shows the main thread's state: a zombie main
		// thread whose other threads run is a live process (the kernel
		// counts the zombie among num_threads until the last thread goes).
		exited = (p.state == 'Z' || p.state == 'X') && p.nthreads <= 1
	}
	if exited {
		// The clocks were read before the state: the exit's last stretch (the
		// address-space teardown, the last switch) may have run in between,
		// milliseconds for a large process. A zombie's clocks are final: read
		// them again, or the process's final CPU would read below its wait4
		// rusage. They go by pid: kept only if the zombie is still there
		// after them, unreaped, so that the pid was still its own.
		if r, err := st.clock(base | cpuclockSched); err == nil && r != rtime {
			var u, k uint64
			if p.matched {
				u, k, err = st.ticks(base)
			}
			if err == nil && st.stillOurs(p) {
				rtime, moved = r, true
				if p.matched {
					utime, stime = u, k
				}
			}
		}
	}
	if !p.matched {
		p.rtime = rtime
		return true
	}
	if moved {
		e := account.Evidence{UTime: utime, STime: stime, RTime: rtime, KThread: p.kthread}
		if err := st.check(e, p.start, true); err != nil {
			dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
			return true
		}
		p.user, p.ker = p.split.Adjust(e)
		p.rtime = rtime
	}
	st.creation(p.start, &p.creation, &p.credOff)
	if exited {
		// A zombie: its times are final. Report it exited, once, and
		// keep it so that the listing does not take it for a new one.
		if p.reported {
			st.exitProc(p, dst, time.Now(), true)
		}
		p.zombie = true
		return true
	}
	p.lastAlive = st.now
	p.out = st.gen
	if st.opts.Threads {
		if p.threadsKnown && p.threadsAt == rtime && p.pid != selfPID {
			st.keepThreads(p)
		} else {
			p.threadsKnown = st.readThreads(p, dst)
			p.threadsAt = rtime
		}
	}
	return true
}

// keepThreads reports p's threads as last read, without reading them: p's
// exact total (its SCHED clock, every thread's run time and its exited
// threads') has not moved since before that read, so none of its threads
// has run since. A thread that ran, was created (its creator ran) or exited
// (it ran to exit) would have moved it. So their times, the thread list
// and every state a thread reaches by running are as last read; what
// changes without running (a sleeper woken but not yet on a CPU, a name
// written from outside) waited for the thread's next run before too, as
// the stat file is read only when schedstat moved. An idle process of
// 1,000 threads then refreshes with its clock read and its pidfd polled.
func (st *state) keepThreads(p *proc) {
	for _, t := range p.torder {
		t.read, t.seen = st.gen, st.gen
		if !t.zombie { // an exited main thread, reported once
			t.out = st.gen
			t.lastAlive = st.now
		}
	}
}

func (st *state) check(e account.Evidence, start uint64, process bool) error {
	err := account.CheckTicks(e)
	if err == nil {
		err = st.clocks.CheckRuntime(e.RTime, start, process, st.offset)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", cputime.ErrInvalidData, err)
	}
	return nil
}

func taskError(pid, tid int, err error) error {
	switch {
	case errors.Is(err, os.ErrPermission):
		err = fmt.Errorf("%w: %w", cputime.ErrAccessDenied, err)
	case errors.Is(err, procfs.ErrFileParse):
		err = fmt.Errorf("%w: %w", cputime.ErrInvalidData, err)
	}
	if tid != 0 {
		return fmt.Errorf("reading thread %d of process %d: %w", tid, pid, err)
	}
	return fmt.Errorf("reading process %d: %w", pid, err)
}
