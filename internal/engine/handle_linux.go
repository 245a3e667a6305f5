package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
	eng    *Engine // the Engine that opened it
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

func (h *handleSys) init(eng *Engine) {
	h.eng, h.clocks = eng, eng.clocks
	h.pidfd, h.probe = -1, -1
	h.exit.init(eng.clocks)
	h.closing = make(chan struct{})
}

func (h *handleSys) base() *handleSys { return h }

// openProbe gives the handle an exit probe for its pidfd, where it can
// have one: a cheaper check than polling the pidfd (kernel.OpenExitProbe).
func (h *handleSys) openProbe() {
	if h.pidfd >= 0 && h.eng.probe {
		h.probe, _ = kernel.OpenExitProbe(h.pidfd)
	}
}

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
func (h *handleSys) state() (kernel.TaskState, error) {
	if h.pidfd >= 0 {
		if h.probe >= 0 && !kernel.ProbeExited(h.probe) {
			return kernel.TaskRunning, nil
		}
		return kernel.PidfdState(h.pidfd)
	}
	var buf [2048]byte // on the stack: stat parses by value
	n, err := h.stat.ReadAt0(buf[:])
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return kernel.TaskGone, nil
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
	exact := false
	if valid {
		// An impossible final reading is not kept: the last seen stand.
		if final, err := h.result(sample); err == nil {
			t, exact = final, true
		}
	}
	return h.exit.record(at, t, exact)
}

// FinalExact reports whether the task's exit is recorded with times read
// after it (cputime.Process.FinalExact).
func (h *handleSys) FinalExact() bool { return h.exit.finalExact() }

// openCommon opens the pidfd, reads the task's start time from its stat
// file at statPath, and confirms that what it read was the pidfd's task.
func (h *handleSys) openCommon(eng *Engine, id int, thread bool, statPath []byte) (st procfs.Stat, err error) {
	h.init(eng)
	fd, err := eng.openPidfd(id, thread)
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
	if err := h.clocks.CheckStart(st.StartTime, h.clocks.BootOffset()); err != nil {
		return procfs.Stat{}, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if st.PID != id {
		return procfs.Stat{}, fmt.Errorf("%w: %s names task %d", ErrNotFound, statPath, st.PID)
	}
	if fd >= 0 {
		// The pidfd came first: if its task is still there, the stat we
		// read was its own, not a successor's.
		s, err := kernel.PidfdState(fd)
		if err != nil {
			return procfs.Stat{}, err
		}
		if s == kernel.TaskGone {
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

// goneOr turns "the kept-open file has no task any more" into kernel.TaskGone.
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
func statState(st procfs.Stat, process bool) kernel.TaskState {
	if (st.State == 'Z' || st.State == 'X') && (!process || st.NumThreads <= 1) {
		return kernel.TaskExited
	}
	return kernel.TaskRunning
}

// CloseWhenUnreachable has h closed once owner, the exported handle that
// holds it, becomes unreachable without Close (runtime.AddCleanup). Call it
// once, right after opening, before h is shared. h must not refer to owner,
// or owner would stay reachable.
func CloseWhenUnreachable[O any, H interface {
	Close() error
	base() *handleSys
}](owner *O, h H) {
	h.base().cleanup = runtime.AddCleanup(owner, func(h H) { h.Close() }, h)
}
