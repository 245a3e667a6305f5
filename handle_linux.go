package cputime

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
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
// task's exit and records the moment; without a pidfd, the exit poller
// (exitpoll_linux.go) finds it; a query that sees the exit first records it
// instead. The final times are read from the exited task if it has not been
// reaped yet (a zombie process keeps its exact totals until its parent
// waits for it), else they are the last the handle saw. Wait blocks on the
// recorded exit: it reads nothing while it waits.
//
// Release: the exported Process and Thread point to their processSys and
// threadSys, which hold everything to release. The watcher and poller hold
// the sys, never the exported handle, so a handle dropped without Close
// becomes unreachable, and its cleanup (runtime.AddCleanup) closes the sys:
// pidfd, kept-open files, place in the watcher or poller. A Wait in
// progress keeps its handle reachable (runtime.KeepAlive).

// watchKind is how a handle learns of its task's exit.
type watchKind uint8

const (
	watchNone   watchKind = iota // not watched (a one-shot read)
	watchPidfd                   // the exit watcher has its pidfd
	watchPoller                  // the exit poller looks for it
)

// handleSys is the part shared by process and thread handles.
type handleSys struct {
	mu     sync.RWMutex // held for reading by queries, for writing by close
	closed bool
	task
	pid, tid int          // the task's ids; a process's tid is its pid
	pidfd    int          // -1 where the kernel has none
	probe    int          // an epoll instance holding pidfd (kernel.OpenExitProbe); -1 without
	watch    watchKind    // how the exit is watched
	polled   pollEntry    // the handle's place in the exit poller
	stat     *procfs.File // the task's stat file, kept open: see above
	ticks    tickCache    // tick samples of a task read by CPU clocks
	exit     exitState
	closing  chan struct{} // closed by close, to end the Waits in progress
	cleanup  runtime.Cleanup
}

func (h *handleSys) init() {
	h.pidfd, h.probe = -1, -1
	h.exit.init()
	h.closing = make(chan struct{})
}

func (h *handleSys) base() *handleSys { return h }

// openProbe gives the handle an exit probe for its pidfd, where it can
// have one: a cheaper check than polling the pidfd (kernel.OpenExitProbe).
func (h *handleSys) openProbe() {
	if h.pidfd >= 0 && useProbe {
		h.probe, _ = kernel.OpenExitProbe(h.pidfd)
	}
}

// useProbe is whether handles use exit probes; a variable so that tests
// can compare the probe with the poll.
var useProbe = true

// release closes what the handle holds; mu is held for writing.
func (h *handleSys) release() error {
	var err error
	switch h.watch {
	case watchPidfd:
		if w, werr := exitWatcher(); werr == nil {
			w.Unwatch(h.pidfd)
		}
	case watchPoller:
		poller.unwatch(h)
	}
	h.watch = watchNone
	if h.probe >= 0 {
		err = unix.Close(h.probe)
		h.probe = -1
	}
	if h.pidfd >= 0 {
		err = errors.Join(err, unix.Close(h.pidfd))
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
		if h.probe >= 0 && !kernel.ProbeExited(h.probe) {
			return taskRunning, nil
		}
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

// startWatch has the exit watcher (with a pidfd) or else the exit poller
// call o.exited when the task exits, unless its exit is recorded already.
// mu is held for writing, or the handle is not yet shared.
func (h *handleSys) startWatch(o exitObserver) {
	if _, ok := h.exit.final(); ok || h.watch != watchNone {
		return
	}
	if h.pidfd >= 0 {
		if w, err := exitWatcher(); err == nil && w.Watch(h.pidfd, func(at time.Time) { o.exited(observedAt(at)) }) == nil {
			h.watch = watchPidfd
			return
		}
	}
	// No pidfd, or no epoll for it: the poller reads the pidfd or the
	// kept-open stat file.
	h.watch = watchPoller
	poller.watch(o)
}

// ensureWatched watches the task of a handle opened without it (a one-shot
// read's), for Wait.
func (h *handleSys) ensureWatched(o exitObserver) {
	h.mu.RLock()
	need := !h.closed && h.watch == watchNone
	h.mu.RUnlock()
	if need {
		h.mu.Lock()
		if !h.closed {
			h.startWatch(o)
		}
		h.mu.Unlock()
	}
}

// wait blocks until the task's exit is recorded (by the exit watcher or
// poller, or a query), the handle is closed, or ctx is done. It reads
// nothing meanwhile: whoever records the exit reads the final times.
func (h *handleSys) wait(ctx context.Context) error {
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	select {
	case <-h.exit.done:
	case <-h.closing:
	case <-ctx.Done():
	}
	// When more than one is true, the exit wins, as on Windows.
	select {
	case <-h.exit.done:
		return nil
	default:
	}
	select {
	case <-h.closing:
		return ErrClosed
	default:
		return ctx.Err()
	}
}

// closeLocked marks the handle closed and ends the Waits on it; mu is held
// for writing. It returns false if the handle was closed already.
func (h *handleSys) closeLocked() bool {
	if h.closed {
		return false
	}
	h.closed = true
	close(h.closing)
	h.cleanup.Stop() // called by the cleanup itself, or no longer needed
	return true
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
	h.openProbe()
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
	p.pid, p.tid = pid, pid
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
		p.startWatch(p)
	}
	// Dropped without Close, the handle releases what p holds. p must not
	// refer to h, or h would stay reachable.
	p.cleanup = runtime.AddCleanup(h, func(p *processSys) { p.close() }, p)
	return nil
}

// sample reads the process's CPU clocks and says whether they were its own:
// valid is false if the process is gone, when the read may have reached
// another.
func (p *processSys) sample(pid int) (s cpuSample, state taskState, err error) {
	s, e := p.ticks.sample(processClock(pid, 0))
	if state, err = p.state(); err != nil {
		return cpuSample{}, 0, err
	}
	if e != 0 && state != taskGone {
		return cpuSample{}, 0, clockError("process", e)
	}
	return s, state, nil
}

// exited is the exit watcher's and poller's callback. Reading the final
// times may wait for the process to leave the CPU (settle): not on the
// watcher's goroutine, which serves every handle.
func (p *processSys) exited(at exitAt) {
	pid := p.pid
	// One read now, on the watcher's goroutine (a few µs): the parent may
	// reap the process before settle is done, and then this is the last
	// the handle saw.
	p.mu.RLock()
	if !p.closed {
		if s, state, err := p.sample(pid); err == nil && state != taskGone {
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
		p.finishProcess(pid, at)
	}()
}

// finishProcess records the exit of the process, observed at at, with its
// final times read from the zombie while it is still there.
func (p *processSys) finishProcess(pid int, at exitAt) Times {
	if t, ok := p.exit.final(); ok {
		return t
	}
	p.settle(pid)
	s, state, err := p.sample(pid)
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
	if p == nil {
		return Times{}, ErrClosed // a zero Process: no handle
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
	s, state, err := p.sample(h.pid)
	if err != nil {
		return Times{}, err
	}
	if state == taskRunning {
		return p.task.result(s)
	}
	return p.finishProcess(h.pid, foundExited(h.pid, h.pid)), nil
}

func (p *processSys) wait(ctx context.Context, h *Process) error {
	if p == nil {
		return ErrClosed
	}
	// One read now: a task already exited is recorded at once, and the
	// last times the handle saw are as of the Wait.
	if _, err := p.times(h); errors.Is(err, ErrClosed) {
		return err
	}
	p.ensureWatched(p)
	err := p.handleSys.wait(ctx)
	runtime.KeepAlive(h) // a handle in Wait is not released under it
	return err
}

func (p *processSys) close() error {
	if p == nil {
		return ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closeLocked() {
		return ErrClosed
	}
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
	t.openProbe()
	if h.pid, err = t.threadGroup(tid); err != nil {
		return err
	}
	t.pid, t.tid = h.pid, tid
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
	t.startWatch(t)
	t.cleanup = runtime.AddCleanup(h, func(t *threadSys) { t.close() }, t) // as for a process
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
func (t *threadSys) sample(tid int) (s cpuSample, state taskState, err error) {
	if t.own {
		s, e := t.ticks.sample(threadClock(tid, 0))
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

// exited is the exit watcher's and poller's callback.
func (t *threadSys) exited(at exitAt) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return
	}
	s, state, err := t.sample(t.tid)
	if errors.Is(err, errTaskGone) {
		state, err = taskGone, nil
	}
	// The watcher saw the exit: whatever the stat file says, these are
	// final if they could be read.
	t.finish(at, s, err == nil && state != taskGone)
}

func (t *threadSys) times(h *Thread) (Times, error) {
	if h.pseudo {
		return currentThreadTimes()
	}
	if t == nil {
		return Times{}, ErrClosed // a zero Thread: no handle
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
	s, state, err := t.sample(h.tid)
	if errors.Is(err, errTaskGone) {
		state, err = taskGone, nil
	}
	if err != nil {
		return Times{}, err
	}
	if state == taskRunning {
		return t.task.result(s)
	}
	return t.finish(foundExited(h.pid, h.tid), s, state == taskExited), nil
}

func (t *threadSys) wait(ctx context.Context, h *Thread) error {
	if t == nil {
		return ErrClosed
	}
	if _, err := t.times(h); errors.Is(err, ErrClosed) { // as for a process
		return err
	}
	t.ensureWatched(t)
	err := t.handleSys.wait(ctx)
	runtime.KeepAlive(h)
	return err
}

func (t *threadSys) close() error {
	if t == nil {
		return ErrClosed
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closeLocked() {
		return ErrClosed
	}
	err := t.release()
	if t.schedstat != nil {
		err = errors.Join(err, t.schedstat.Close())
		t.schedstat = nil
	}
	return err
}
