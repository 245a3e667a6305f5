package cputime

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/engine"
)

// On Linux the engine (internal/engine) answers every query; this file
// hands the API's calls to it and copies its answers into the API's types.

var selfPID = os.Getpid()

func getpid() int { return selfPID }
func gettid() int { return unix.Gettid() }

// fromEngine copies the engine's Times into the API's.
func fromEngine(t engine.Times, err error) (Times, error) {
	return Times{
		Creation:   t.Creation,
		Exit:       t.Exit,
		ExitSource: ExitSource(t.ExitSource),
		Kernel:     t.Kernel,
		User:       t.User,
	}, err
}

// The package's functions ask engine.Default, the engine of the system's
// configuration. A handle opens through its sys's eng, nil for the
// default; after that, its engine handle knows its Engine.

// processSys is what a Process holds: the engine's open process.
type processSys struct {
	eng *engine.Engine // nil: engine.Default
	h   *engine.Process
}

// engineOf returns e, or engine.Default for nil.
func engineOf(e *engine.Engine) *engine.Engine {
	if e == nil {
		return engine.Default
	}
	return e
}

func (s *processSys) open(p *Process, pid int, watch bool) error {
	h, err := engineOf(s.eng).OpenProcess(pid, p.access&ProcessQueryInformation != 0, watch)
	if err != nil {
		return err
	}
	s.h = h
	// Dropped without Close, p releases what h holds; h never refers to p.
	engine.CloseWhenUnreachable(p, h)
	return nil
}

func (s *processSys) times(p *Process) (Times, error) {
	if p.pseudo {
		return fromEngine(engine.CurrentProcessTimes())
	}
	if s == nil {
		return Times{}, ErrClosed // a zero Process: no handle
	}
	return fromEngine(s.h.Times())
}

func (s *processSys) wait(ctx context.Context, p *Process) error {
	if s == nil {
		return ErrClosed
	}
	return s.h.Wait(ctx)
}

func (s *processSys) close() error {
	if s == nil {
		return ErrClosed
	}
	return s.h.Close()
}

func (s *processSys) finalExact() bool { return s != nil && s.h.FinalExact() }

// threadSys is what a Thread holds: the engine's open thread.
type threadSys struct {
	eng *engine.Engine // nil: engine.Default
	h   *engine.Thread
}

func (s *threadSys) open(t *Thread, tid int) error {
	h, err := engineOf(s.eng).OpenThread(tid, t.access&ThreadQueryInformation != 0)
	if err != nil {
		return err
	}
	s.h, t.pid = h, h.PID()
	engine.CloseWhenUnreachable(t, h)
	return nil
}

func (s *threadSys) times(t *Thread) (Times, error) {
	if t.pseudo {
		return fromEngine(engine.CurrentThreadTimes())
	}
	if s == nil {
		return Times{}, ErrClosed // a zero Thread: no handle
	}
	return fromEngine(s.h.Times())
}

func (s *threadSys) wait(ctx context.Context, _ *Thread) error {
	if s == nil {
		return ErrClosed
	}
	return s.h.Wait(ctx)
}

func (s *threadSys) close() error {
	if s == nil {
		return ErrClosed
	}
	return s.h.Close()
}

func oneShotProcessTimes(pid int) (Times, error) {
	return fromEngine(engine.Default.ProcessTimes(pid))
}

func oneShotThreadTimes(tid int) (Times, error) {
	return fromEngine(engine.Default.ThreadTimes(tid))
}

func threadInfo(i engine.ThreadInfo) ThreadInfo {
	t, _ := fromEngine(i.Times, nil)
	return ThreadInfo{ID: i.ID, ProcessID: i.ProcessID, Name: i.Name, Times: t}
}

// processInfo copies the engine's ProcessInfo, with Cycles derived as
// ProcessCycleTime derives them.
func processInfo(i engine.ProcessInfo) ProcessInfo {
	t, _ := fromEngine(i.Times, nil)
	info := ProcessInfo{ID: i.ID, ParentID: i.ParentID, Name: i.Name, Threads: i.Threads, Times: t}
	if f, err := referenceFrequency(); err == nil && info.ID != 0 {
		info.Cycles = cyclesFromNanos(uint64(t.Total()), f.Hz)
	}
	return info
}

func threads(pid int, yield func(ThreadInfo, error) bool) {
	engine.Default.Threads(pid, func(i engine.ThreadInfo, err error) bool { return yield(threadInfo(i), err) })
}

func allThreads(yield func(ThreadInfo, error) bool) {
	engine.Default.AllThreads(func(i engine.ThreadInfo, err error) bool { return yield(threadInfo(i), err) })
}

func processes(yield func(ProcessInfo, error) bool) {
	engine.Default.Processes(func(i engine.ProcessInfo, err error) bool { return yield(processInfo(i), err) })
}

func processInfoOf(pid int) (ProcessInfo, error) {
	i, err := engine.Default.ProcessInfoOf(pid)
	return processInfo(i), err
}

// cpuSample is a reading of the calling thread's CPU clocks, for Measure.
type cpuSample = account.Evidence

func threadSample() (cpuSample, error) { return engine.ThreadSample() }
