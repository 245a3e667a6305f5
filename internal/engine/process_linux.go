package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cputime/cputime/internal/kernel"
)

// Process is an open process: what a cputime.Process holds on Linux.
type Process struct {
	handleSys
}

// OpenProcess opens process pid. queryInfo asks for the check of
// ProcessQueryInformation (ptrace read access); watch, for the exit to be
// learned the moment it happens, which a one-shot read does not need.
func (eng *Engine) OpenProcess(pid int, queryInfo, watch bool) (*Process, error) {
	p := new(Process)
	if err := p.open(eng, pid, queryInfo, watch); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Process) open(eng *Engine, pid int, queryInfo, watch bool) (err error) {
	var path [64]byte
	statPath := eng.procPath(path[:0], pid, "stat")
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	p.process = true
	p.pid, p.tid = pid, pid
	st, err := p.openCommon(eng, pid, false, statPath)
	if err != nil {
		return err
	}
	// A thread id is not a process (Windows: ERROR_INVALID_PARAMETER), but
	// /proc/TID/stat exists for it; only a thread-group leader has a
	// process CPU clock.
	if _, e := readClock(processClock(pid, cpuclockSched)); e != 0 {
		return fmt.Errorf("%w: %d is not a process id (a thread id?)", ErrNotFound, pid)
	}
	if queryInfo {
		if err := eng.ptraceReadable(pid); err != nil {
			return fmt.Errorf("checking PROCESS_QUERY_INFORMATION: %w", err)
		}
	}
	p.start = st.StartTime
	p.kthread = st.Flags&pfKthread != 0
	p.split = new(split)
	p.fixCreation()
	// Already exited (a zombie): its exit is dated now from the scheduler's
	// record, not by the watcher, which would wake at once and date it to
	// the moment of opening.
	if state, err := p.state(); err == nil && state != kernel.TaskRunning {
		p.timesLocked()
	}
	if watch {
		p.startWatch(p)
	}
	return nil
}

// sample reads the process's CPU clocks and says whether they were its own:
// valid is false if the process is gone, when the read may have reached
// another.
func (p *Process) sample(pid int) (s cpuSample, state kernel.TaskState, err error) {
	s, e := p.ticks.sample(processClock(pid, 0))
	if state, err = p.state(); err != nil {
		return cpuSample{}, 0, err
	}
	if e != 0 && state != kernel.TaskGone {
		return cpuSample{}, 0, clockError("process", e)
	}
	return s, state, nil
}

// exited is the exit watcher's and poller's callback. Reading the final
// times may wait for the process to leave the CPU (settle): not on the
// watcher's goroutine, which serves every handle.
func (p *Process) exited(at exitAt) {
	pid := p.pid
	// One read now, on the watcher's goroutine (a few µs): the parent may
	// reap the process before settle is done, and then this is the last
	// the handle saw.
	p.mu.RLock()
	if !p.closed {
		if s, state, err := p.sample(pid); err == nil && state != kernel.TaskGone {
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
func (p *Process) finishProcess(pid int, at exitAt) Times {
	if t, ok := p.exit.final(); ok {
		return t
	}
	p.settle(pid)
	s, state, err := p.sample(pid)
	return p.finish(at, s, err == nil && state == kernel.TaskExited)
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
func (p *Process) settle(pid int) {
	const settleLimit = 50 * time.Millisecond
	var path [64]byte
	statPath := p.eng.procPath(path[:0], pid, "stat")
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

// Times reads the process's times (cputime.Process.Times).
func (p *Process) Times() (Times, error) {
	if p == nil {
		return Times{}, ErrClosed // a zero Process: no handle
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Times{}, ErrClosed
	}
	return p.timesLocked()
}

// timesLocked is times with mu held for reading and the handle open.
func (p *Process) timesLocked() (Times, error) {
	if t, ok := p.exit.final(); ok {
		return t, nil
	}
	s, state, err := p.sample(p.pid)
	if err != nil {
		return Times{}, err
	}
	if state == kernel.TaskRunning {
		return p.task.result(s)
	}
	return p.finishProcess(p.pid, foundExited(p.pid, p.pid)), nil
}

// Wait blocks until the process's exit is recorded, the handle is closed
// or ctx is done (cputime.Process.Wait).
func (p *Process) Wait(ctx context.Context) error {
	if p == nil {
		return ErrClosed
	}
	// One read now: a task already exited is recorded at once, and the
	// last times the handle saw are as of the Wait.
	if _, err := p.Times(); errors.Is(err, ErrClosed) {
		return err
	}
	p.ensureWatched(p)
	return p.handleSys.wait(ctx)
}

// Close releases what the handle holds; ErrClosed if it was closed already.
func (p *Process) Close() error {
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
