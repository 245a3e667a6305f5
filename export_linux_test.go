package cputime

import (
	"fmt"
	"iter"

	"github.com/cputime/cputime/internal/engine"
)

// Views of the engine's state (internal/engine/views_linux.go), for this
// package's external tests.
var (
	WatchedCount  = engine.WatchedCount
	PollerRunning = engine.PollerRunning
)

// EngineConfig configures a test's Engine (engine.Config).
type EngineConfig = engine.Config

// Engine is a test's engine of its own configuration: the package's API
// over it, for what a test needs, as the package's functions are over
// engine.Default. A new one has nothing remembered of any task.
type Engine struct{ e *engine.Engine }

// NewEngine returns an Engine over c.
func NewEngine(c EngineConfig) Engine { return Engine{engine.New(c)} }

// PidfdIdentities reports whether the Engine's one-shots can take the
// pidfd path.
func (e Engine) PidfdIdentities() bool { return e.e.PidfdIdentities() }

// OpenProcess is OpenProcess through e.
func (e Engine) OpenProcess(pid int) (*Process, error) {
	if err := checkID("process", pid); err != nil {
		return nil, err
	}
	p := &Process{pid: pid, access: defaultProcessAccess, sys: &processSys{eng: e.e}}
	if err := p.sys.open(p, pid, true); err != nil {
		return nil, fmt.Errorf("opening process %d: %w", pid, err)
	}
	return p, nil
}

// OpenThread is OpenThread through e.
func (e Engine) OpenThread(tid int) (*Thread, error) {
	if err := checkID("thread", tid); err != nil {
		return nil, err
	}
	t := &Thread{tid: tid, access: defaultThreadAccess, sys: &threadSys{eng: e.e}}
	if err := t.sys.open(t, tid); err != nil {
		return nil, fmt.Errorf("opening thread %d: %w", tid, err)
	}
	return t, nil
}

// ProcessTimes is ProcessTimes through e, for another process.
func (e Engine) ProcessTimes(pid int) (Times, error) { return fromEngine(e.e.ProcessTimes(pid)) }

// ThreadTimes is ThreadTimes through e.
func (e Engine) ThreadTimes(tid int) (Times, error) { return fromEngine(e.e.ThreadTimes(tid)) }

// Threads is Threads through e.
func (e Engine) Threads(pid int) iter.Seq2[ThreadInfo, error] {
	return func(yield func(ThreadInfo, error) bool) {
		e.e.Threads(pid, func(i engine.ThreadInfo, err error) bool { return yield(threadInfo(i), err) })
	}
}

// OneShotProcessBoth reads process pid by both one-shot paths: by pidfd (ok
// false where that path does not answer) and by its stat file.
func (e Engine) OneShotProcessBoth(pid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	p, ok, s, err := e.e.OneShotProcessBoth(pid)
	viaPidfd, _ = fromEngine(p, nil)
	viaStat, _ = fromEngine(s, nil)
	return viaPidfd, ok, viaStat, err
}

// OneShotThreadBoth is OneShotProcessBoth for thread tid.
func (e Engine) OneShotThreadBoth(tid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	p, ok, s, err := e.e.OneShotThreadBoth(tid)
	viaPidfd, _ = fromEngine(p, nil)
	viaStat, _ = fromEngine(s, nil)
	return viaPidfd, ok, viaStat, err
}
