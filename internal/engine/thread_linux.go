package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// Thread is an open thread: what a cputime.Thread holds on Linux.
type Thread struct {
	handleSys
	// For a thread of another process, whose CPU clock the kernel does not
	// let us read: its schedstat file, kept open beside the stat file.
	schedstat *procfs.File
	own       bool // a thread of the calling process: its CPU clocks are readable
	// proof proves a clock reading of an own thread its own (runProof).
	proof runProof
}

// OpenThread opens thread tid. queryInfo asks for the check of
// THREAD_QUERY_INFORMATION (ptrace read access).
func (eng *Engine) OpenThread(tid int, queryInfo bool) (*Thread, error) {
	t := new(Thread)
	if err := t.open(eng, tid, queryInfo); err != nil {
		return nil, err
	}
	return t, nil
}

// PID returns the id of the process the thread belongs to.
func (t *Thread) PID() int { return t.pid }

func (t *Thread) open(eng *Engine, tid int, queryInfo bool) (err error) {
	defer func() {
		if err != nil {
			t.release()
		}
	}()
	t.init(eng)
	if t.pidfd, err = eng.openPidfd(tid, true); err != nil {
		return err
	}
	t.openProbe()
	if t.pid, err = t.threadGroup(tid); err != nil {
		return err
	}
	t.tid = tid
	t.own = t.pid == selfPID
	taskDir := eng.proc.Path(strconv.Itoa(t.pid), "task", strconv.Itoa(tid))
	st, err := t.readStart(tid, []byte(taskDir+"/stat"))
	if err != nil {
		return err
	}
	if queryInfo {
		if err := eng.ptraceReadable(tid); err != nil {
			return fmt.Errorf("checking THREAD_QUERY_INFORMATION: %w", err)
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
		if t.eng.schedstat() {
			if t.schedstat, err = procfs.OpenFile(taskDir + "/schedstat"); err != nil {
				return sysError(err)
			}
		}
	}
	if state, err := t.state(); err == nil && state != kernel.TaskRunning { // as for a process
		t.timesLocked()
	}
	t.startWatch(t)
	return nil
}

// threadGroup returns the id of the process thread tid belongs to: from the
// pidfd (PIDFD_GET_INFO, Linux 6.13), else from /proc/TID/status, five
// times dearer.
func (t *Thread) threadGroup(tid int) (int, error) {
	if t.pidfd >= 0 {
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
		if err := unix.IoctlPidfdInfo(t.pidfd, &info); err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 && int(info.Pid) == tid {
			return int(info.Tgid), nil
		}
	}
	status, err := t.eng.proc.ReadStatus(tid)
	if err != nil {
		return 0, sysError(err)
	}
	if status.Pid != tid {
		return 0, fmt.Errorf("%w: /proc/%d/status names task %d", ErrNotFound, tid, status.Pid)
	}
	return status.Tgid, nil
}

// readStatFile reads the kept-open stat file into buf.
func (t *Thread) readStatFile(buf []byte) (procfs.Stat, error) {
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
func (t *Thread) sample(tid int) (s cpuSample, state kernel.TaskState, err error) {
	if t.own {
		s, e := t.ticks.sample(threadClock(tid, 0))
		if e == 0 {
			// A reading proven its thread's, which ran since: running.
			if mono := t.clocks.Mono(); t.proof.proves(s.RTime, mono, true) {
				t.proof.saw(s.RTime, mono)
				return s, kernel.TaskRunning, nil
			}
		}
		if state, err = t.state(); err != nil {
			return cpuSample{}, 0, err
		}
		if e != 0 && state != kernel.TaskGone {
			return cpuSample{}, 0, clockError("thread", e)
		}
		if e == 0 && state == kernel.TaskRunning {
			// Running after the clock was read: the reading was its own.
			t.proof.saw(s.RTime, t.clocks.Mono())
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
		return cpuSample{RTime: ss.RunTime}, kernel.TaskRunning, nil
	}
	st, err := t.readStatFile(buf[:])
	if err != nil {
		return cpuSample{}, 0, goneOr(err)
	}
	return cpuSample{UTime: st.UTime, STime: st.STime, RTime: ss.RunTime}, statState(st, false), nil
}

// exited is the exit watcher's and poller's callback.
func (t *Thread) exited(at exitAt) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return
	}
	s, state, err := t.sample(t.tid)
	if errors.Is(err, errTaskGone) {
		state, err = kernel.TaskGone, nil
	}
	// The watcher saw the exit: whatever the stat file says, these are
	// final if they could be read.
	t.finish(at, s, err == nil && state != kernel.TaskGone)
}

// Times reads the thread's times (cputime.Thread.Times).
func (t *Thread) Times() (Times, error) {
	if t == nil {
		return Times{}, ErrClosed // a zero Thread: no handle
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return Times{}, ErrClosed
	}
	return t.timesLocked()
}

// timesLocked is times with mu held for reading and the handle open.
func (t *Thread) timesLocked() (Times, error) {
	if r, ok := t.exit.final(); ok {
		return r, nil
	}
	s, state, err := t.sample(t.tid)
	if errors.Is(err, errTaskGone) {
		state, err = kernel.TaskGone, nil
	}
	if err != nil {
		return Times{}, err
	}
	if state == kernel.TaskRunning {
		return t.task.result(s)
	}
	return t.finish(foundExited(t.pid, t.tid), s, state == kernel.TaskExited), nil
}

// Wait blocks until the thread's exit is recorded, the handle is closed
// or ctx is done (cputime.Thread.Wait).
func (t *Thread) Wait(ctx context.Context) error {
	if t == nil {
		return ErrClosed
	}
	if _, err := t.Times(); errors.Is(err, ErrClosed) { // as for a process
		return err
	}
	t.ensureWatched(t)
	return t.handleSys.wait(ctx)
}

// Close releases what the handle holds; ErrClosed if it was closed already.
func (t *Thread) Close() error {
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
