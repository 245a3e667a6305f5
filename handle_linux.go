package cputime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

// Handles hold their task, not its id. Each handle opens a pidfd for its
// task (a thread pidfd, PIDFD_THREAD, for a thread handle) and reads the
// task's CPU clocks, which are addressed by id, then asks the pidfd whether
// the task was still there: a read that might have reached a task that
// reused the id is never reported. Where the kernel has no pidfds of the
// kind (process pidfds before 5.3, thread pidfds before 6.9), a /proc stat
// file kept open does the same, more slowly: the kernel binds it to the task
// it was opened for. Handles of other processes' threads read their times
// through such kept-open files anyway.
//
// Exit: the exit watcher (pidfd_linux.go) wakes when a pidfd reports its
// task's exit and records the moment; a query that sees the exit first
// records it instead. The final times are read from the exited task if it
// has not been reaped yet (a zombie process keeps its exact totals until its
// parent waits for it), else they are the last the handle saw.

// pollInterval is how often Wait reads the task's times while it waits
// (and, where no pidfd wakes the exit watcher, looks for the exit).
const pollInterval = 10 * time.Millisecond

// handleSys is the part shared by process and thread handles.
type handleSys struct {
	mu     sync.RWMutex // held for reading by queries, for writing by close
	closed bool
	task
	pidfd   int          // -1 where the kernel has none
	watched bool         // the exit watcher has the pidfd
	stat    *procfs.File // the task's stat file, kept open: see above
	ticks   tickCache    // tick samples of a task read by CPU clocks
	exit    exitState
}

func (h *handleSys) init() {
	h.pidfd = -1
	h.exit.init()
}

// release closes what the handle holds; mu is held for writing.
func (h *handleSys) release() error {
	var err error
	if h.pidfd >= 0 {
		if h.watched {
			if w, werr := exitWatcher(); werr == nil {
				w.unwatch(h.pidfd)
			}
			h.watched = false
		}
		err = unix.Close(h.pidfd)
		h.pidfd = -1
	}
	if h.stat != nil {
		err = errors.Join(err, h.stat.Close())
		h.stat = nil
	}
	return err
}

// state says whether the task is running, exited or gone, from the pidfd or
// else the kept-open stat file.
func (h *handleSys) state() (taskState, error) {
	if h.pidfd >= 0 {
		return pidfdState(h.pidfd)
	}
	var buf [2048]byte // on the stack: stat parses by value
	n, err := h.stat.ReadAt0(buf[:])
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return taskGone, nil
		}
		return 0, sysError(err)
	}
	st, err := procfs.ParseStat(buf[:n])
	if err != nil {
		return 0, err
	}
	return statState(st, h.process), nil
}

// watch asks the exit watcher to call onExit when the task exits. Without a
// pidfd, exits are seen by queries and by Wait's polling only.
func (h *handleSys) watch(onExit func(time.Time)) {
	if h.pidfd < 0 {
		return
	}
	if w, err := exitWatcher(); err == nil {
		h.watched = w.watch(h.pidfd, onExit) == nil // else: as without a pidfd
	}
}

// wait blocks until the task's exit is recorded or ctx is done. poll reads
// the task's times: every pollInterval while waiting, so that the last times
// the handle saw are never older than that if the task's final accounting
// is gone before it can be read (a process reaped by its parent at once);
// it also records the exit where no pidfd wakes the watcher, and fails once
// the handle is closed.
func (h *handleSys) wait(ctx context.Context, poll func() error) error {
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-h.exit.done:
			return nil
		default:
		}
		if err := poll(); err != nil {
			return err
		}
		select {
		case <-h.exit.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// finish records the exit observed at at. sample, read just before the task
// was seen exited, holds its final accounting if valid; otherwise the last
// times the handle saw stand.
func (h *handleSys) finish(at exitAt, sample cpuSample, valid bool) Times {
	if t, ok := h.exit.final(); ok {
		return t
	}
	t := h.lastKnown()
	if valid {
		// An impossible final reading is not kept: the last seen stand.
		if final, err := h.result(sample); err == nil {
			t = final
		}
	}
	return h.exit.record(at, t)
}

// openCommon opens the pidfd, reads the task's start time from its stat
// file at statPath, and confirms that what it read was the pidfd's task.
func (h *handleSys) openCommon(id int, thread bool, statPath []byte) (st procfs.Stat, err error) {
	h.init()
	fd, err := openPidfd(id, thread)
	if err != nil {
		return procfs.Stat{}, err
	}
	h.pidfd = fd
	return h.readStart(id, statPath)
}

// readStart reads the task's start time from its stat file at statPath and
// confirms that what it read was the task of the pidfd, already open.
//
// The Stat returned has no Comm: it aliased a buffer of this function's.
func (h *handleSys) readStart(id int, statPath []byte) (_ procfs.Stat, err error) {
	fd := h.pidfd
	var buf [2048]byte
	st, err := readStat(statPath, buf[:])
	if err != nil {
		return procfs.Stat{}, err
	}
	st.Comm = nil
	if err := account.CheckStart(st.StartTime, bootOffset()); err != nil {
		return procfs.Stat{}, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if st.PID != id {
		return procfs.Stat{}, fmt.Errorf("%w: %s names task %d", ErrNotFound, statPath, st.PID)
	}
	if fd >= 0 {
		// The pidfd came first: if its task is still there, the stat we
		// read was its own, not a successor's.
		s, err := pidfdState(fd)
		if err != nil {
			return procfs.Stat{}, err
		}
		if s == taskGone {
			return procfs.Stat{}, fmt.Errorf("%w: task %d exited while being opened", ErrNotFound, id)
		}
	} else {
		f, err := procfs.OpenFile(string(statPath))
		if err != nil {
			return procfs.Stat{}, sysError(err)
		}
		h.stat = f
		// The file came after the read: check it shows the same task.
		n, err := f.ReadAt0(buf[:])
		if err != nil {
			return procfs.Stat{}, sysError(err)
		}
		again, err := procfs.ParseStat(buf[:n])
		if err != nil {
			return procfs.Stat{}, err
		}
		if again.StartTime != st.StartTime {
			return procfs.Stat{}, fmt.Errorf("%w: task %d exited while being opened", ErrNotFound, id)
		}
	}
	return st, nil
}

type processSys struct {
	handleSys
}

func (p *processSys) open(h *Process, pid int, watch bool) (err error) {
	var path [64]byte
	statPath := procPath(path[:0], pid, "stat")
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	p.process = true
	st, err := p.openCommon(pid, false, statPath)
	if err != nil {
		return err
	}
	// A thread id is not a process (Windows: ERROR_INVALID_PARAMETER), but
	// /proc/TID/stat exists for it; only a thread-group leader has a
	// process CPU clock.
	if _, e := readClock(processClock(pid, cpuclockSched)); e != 0 {
		return fmt.Errorf("%w: %d is not a process id (a thread id?)", ErrNotFound, pid)
	}
	if h.access&ProcessQueryInformation != 0 {
		if err := ptraceReadable(pid); err != nil {
			return fmt.Errorf("checking %v: %w", ProcessQueryInformation, err)
		}
	}
	p.start = st.StartTime
	p.kthread = st.Flags&pfKthread != 0
	p.split = new(split)
	p.fixCreation()
	// Already exited (a zombie): its exit is dated now from the scheduler's
	// record, not by the watcher, which would wake at once and date it to
	// the moment of opening.
	if state, err := p.state(); err == nil && state != taskRunning {
		p.timesLocked(h)
	}
	if watch {
		p.watch(func(at time.Time) { p.observeExit(h.pid, at) })
	}
	return nil
}

// sample reads the process's CPU clocks and says whether they were its own:
// valid is false if the process is gone, when the read may have reached
// another.
func (p *processSys) sample(pid int, c account.Clock) (s cpuSample, state taskState, err error) {
	s, e := p.ticks.sample(processClock(pid, 0), c.Mono)
	if state, err = p.state(); err != nil {
		return cpuSample{}, 0, err
	}
	if e != 0 && state != taskGone {
		return cpuSample{}, 0, clockError("process", e)
	}
	return s, state, nil
}

// observeExit is the exit watcher's callback. Reading the final times may
// wait for the process to leave the CPU (settle): not on the watcher's
// goroutine, which serves every handle.
func (p *processSys) observeExit(pid int, at time.Time) {
	// One read now, on the watcher's goroutine (a few µs): the parent may
	// reap the process before settle is done, and then this is the last
	// the handle saw.
	p.mu.RLock()
	if !p.closed {
		if s, state, err := p.sample(pid, account.Now()); err == nil && state != taskGone {
			p.result(s)
		}
	}
	p.mu.RUnlock()
	go func() {
		p.mu.RLock()
		defer p.mu.RUnlock()
		if p.closed {
			return
		}
		p.finishProcess(pid, observedAt(at))
	}()
}

// finishProcess records the exit of the process, observed at at, with its
// final times read from the zombie while it is still there.
func (p *processSys) finishProcess(pid int, at exitAt) Times {
	if t, ok := p.exit.final(); ok {
		return t
	}
	p.settle(pid)
	s, state, err := p.sample(pid, account.Now())
	return p.finish(at, s, err == nil && state == taskExited)
}

// pfNoFreeze is PF_NOFREEZE (include/linux/sched.h), which do_task_dead
// sets on an exiting task just before its last trip through the scheduler.
const pfNoFreeze = 0x8000

// settle waits until the exited process has been switched out for the last
// time, for at most settleLimit. The kernel reports an exit (to pidfd
// pollers and to the parent) before the exiting thread has left the CPU:
// it still runs the end of do_exit, tens of microseconds, or longer if it
// is preempted there. The parent's wait accounting, read when it reaps,
// includes that tail, which the scheduler adds to the task's runtime when
// it takes the task off the CPU for the last time (another process's CPU
// clock does not include a run in progress). So wait until the main
// thread's flags show do_task_dead, its last step before that, and its
// clock stays put across a pause; if the parent reaps it first, there is
// nothing left to wait for.
func (p *processSys) settle(pid int) {
	const settleLimit = 50 * time.Millisecond
	var path [64]byte
	statPath := procPath(path[:0], pid, "stat")
	deadline := time.Now().Add(settleLimit)
	for {
		var buf [2048]byte
		st, err := readStat(statPath, buf[:])
		if err != nil || st.State != 'Z' || st.StartTime != p.start {
			return // reaped (and perhaps the pid reused): nothing to wait for
		}
		if st.Flags&pfNoFreeze != 0 && st.NumThreads <= 1 {
			a, e1 := readClock(processClock(pid, cpuclockSched))
			time.Sleep(20 * time.Microsecond)
			b, e2 := readClock(processClock(pid, cpuclockSched))
			if e1 != 0 || e2 != 0 || a == b {
				return
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func (p *processSys) times(h *Process) (Times, error) {
	if h.pseudo {
		return currentProcessTimes()
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Times{}, ErrClosed
	}
	return p.timesLocked(h)
}

// timesLocked is times with mu held for reading and the handle open.
func (p *processSys) timesLocked(h *Process) (Times, error) {
	if t, ok := p.exit.final(); ok {
		return t, nil
	}
	c := account.Now()
	s, state, err := p.sample(h.pid, c)
	if err != nil {
		return Times{}, err
	}
	if state == taskRunning {
		return p.task.times(s, c)
	}
	return p.finishProcess(h.pid, foundExited(h.pid, h.pid)), nil
}

func (p *processSys) wait(ctx context.Context, h *Process) error {
	return p.handleSys.wait(ctx, func() error {
		_, err := p.times(h)
		return err
	})
}

func (p *processSys) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.closed = true
	return p.release()
}

type threadSys struct {
	handleSys
	// For a thread of another process, whose CPU clock the kernel does not
	// let us read: its schedstat file, kept open beside the stat file.
	schedstat *procfs.File
	own       bool // a thread of the calling process: its CPU clocks are readable
}

func (t *threadSys) open(h *Thread, tid int) (err error) {
	defer func() {
		if err != nil {
			t.release()
		}
	}()
	t.init()
	if t.pidfd, err = openPidfd(tid, true); err != nil {
		return err
	}
	if h.pid, err = t.threadGroup(tid); err != nil {
		return err
	}
	t.own = h.pid == selfPID
	taskDir := procFS.Path(strconv.Itoa(h.pid), "task", strconv.Itoa(tid))
	st, err := t.readStart(tid, []byte(taskDir+"/stat"))
	if err != nil {
		return err
	}
	if h.access&ThreadQueryInformation != 0 {
		if err := ptraceReadable(tid); err != nil {
			return fmt.Errorf("checking %v: %w", ThreadQueryInformation, err)
		}
	}
	t.start = st.StartTime
	t.kthread = st.Flags&pfKthread != 0
	t.split = new(split)
	t.fixCreation()
	if !t.own {
		if t.stat == nil {
			if t.stat, err = procfs.OpenFile(taskDir + "/stat"); err != nil {
				return sysError(err)
			}
		}
		if haveSchedstat() {
			if t.schedstat, err = procfs.OpenFile(taskDir + "/schedstat"); err != nil {
				return sysError(err)
			}
		}
	}
	if state, err := t.state(); err == nil && state != taskRunning { // as for a process
		t.timesLocked(h)
	}
	t.watch(func(at time.Time) { t.observeExit(h.tid, at) })
	return nil
}

// threadGroup returns the id of the process thread tid belongs to: from the
// pidfd (PIDFD_GET_INFO, Linux 6.13), else from /proc/TID/status, five
// times dearer.
func (t *threadSys) threadGroup(tid int) (int, error) {
	if t.pidfd >= 0 {
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
		if err := unix.IoctlPidfdInfo(t.pidfd, &info); err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 && int(info.Pid) == tid {
			return int(info.Tgid), nil
		}
	}
	status, err := procFS.ReadStatus(tid)
	if err != nil {
		return 0, sysError(err)
	}
	if status.Pid != tid {
		return 0, fmt.Errorf("%w: /proc/%d/status names task %d", ErrNotFound, tid, status.Pid)
	}
	return status.Tgid, nil
}

// readStatFile reads the kept-open stat file into buf.
func (t *threadSys) readStatFile(buf []byte) (procfs.Stat, error) {
	n, err := t.stat.ReadAt0(buf)
	if err != nil {
		return procfs.Stat{}, sysError(err)
	}
	return procfs.ParseStat(buf[:n])
}

// sample reads the thread's times and whether they were its own and final.
// Own threads: the thread CPU clocks, then the pidfd (or stat file) to
// confirm the clocks were the thread's. Other processes' threads: their
// kept-open files, which only ever show this thread; ESRCH means it is gone.
func (t *threadSys) sample(tid int, c account.Clock) (s cpuSample, state taskState, err error) {
	if t.own {
		s, e := t.ticks.sample(threadClock(tid, 0), c.Mono)
		if state, err = t.state(); err != nil {
			return cpuSample{}, 0, err
		}
		if e != 0 && state != taskGone {
			return cpuSample{}, 0, clockError("thread", e)
		}
		return s, state, nil
	}
	var buf [2048]byte
	if t.schedstat == nil {
		st, err := t.readStatFile(buf[:])
		if err != nil {
			return cpuSample{}, 0, goneOr(err)
		}
		return cpuSample{UTime: st.UTime, STime: st.STime, RTime: ticksToNanos(st.UTime + st.STime)}, statState(st, false), nil
	}
	// schedstat first: if the thread has not run since the last read, its
	// tick counters have not moved either, and the last split stands; the
	// stat file, four times dearer, is read only when the total moved.
	n, err := t.schedstat.ReadAt0(buf[:])
	if err != nil {
		return cpuSample{}, 0, goneOr(sysError(err))
	}
	ss, err := procfs.ParseSchedstat(buf[:n])
	if err != nil {
		return cpuSample{}, 0, err
	}
	// Without a thread pidfd, only the stat file tells that a thread (a
	// zombie main thread, whose runtime no longer moves) has exited.
	if ss.RunTime <= t.split.Total() && t.pidfd >= 0 {
		return cpuSample{RTime: ss.RunTime}, taskRunning, nil
	}
	st, err := t.readStatFile(buf[:])
	if err != nil {
		return cpuSample{}, 0, goneOr(err)
	}
	return cpuSample{UTime: st.UTime, STime: st.STime, RTime: ss.RunTime}, statState(st, false), nil
}

// goneOr turns "the kept-open file has no task any more" into taskGone.
func goneOr(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return errTaskGone
	}
	return err
}

var errTaskGone = errors.New("task gone")

// statState reads a task's state from its stat line. A process's stat shows
// its main thread's state, and a zombie main thread may still have threads
// running: the process has exited when it is the last (num_threads counts
// it until it is reaped).
func statState(st procfs.Stat, process bool) taskState {
	if (st.State == 'Z' || st.State == 'X') && (!process || st.NumThreads <= 1) {
		return taskExited
	}
	return taskRunning
}

func (t *threadSys) observeExit(tid int, at time.Time) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return
	}
	s, state, err := t.sample(tid, account.Now())
	if errors.Is(err, errTaskGone) {
		state, err = taskGone, nil
	}
	// The watcher saw the exit: whatever the stat file says, these are
	// final if they could be read.
	t.finish(observedAt(at), s, err == nil && state != taskGone)
}

func (t *threadSys) times(h *Thread) (Times, error) {
	if h.pseudo {
		return currentThreadTimes()
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return Times{}, ErrClosed
	}
	return t.timesLocked(h)
}

// timesLocked is times with mu held for reading and the handle open.
func (t *threadSys) timesLocked(h *Thread) (Times, error) {
	if r, ok := t.exit.final(); ok {
		return r, nil
	}
	c := account.Now()
	s, state, err := t.sample(h.tid, c)
	if errors.Is(err, errTaskGone) {
		state, err = taskGone, nil
	}
	if err != nil {
		return Times{}, err
	}
	if state == taskRunning {
		return t.task.times(s, c)
	}
	return t.finish(foundExited(h.pid, h.tid), s, state == taskExited), nil
}

func (t *threadSys) wait(ctx context.Context, h *Thread) error {
	return t.handleSys.wait(ctx, func() error {
		_, err := t.times(h)
		return err
	})
}

func (t *threadSys) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	err := t.release()
	if t.schedstat != nil {
		err = errors.Join(err, t.schedstat.Close())
		t.schedstat = nil
	}
	return err
}
