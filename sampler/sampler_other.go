//go:build !linux

package sampler

import (
	"errors"
	"slices"
	"time"

	"github.com/cputime/cputime"
)

// Elsewhere (Windows) the sampler diffs the root package's native
// snapshots (Toolhelp enumeration and GetProcessTimes/GetThreadTimes): each
// refresh enumerates every process (and, with Options.Threads, every
// thread) afresh. There is nothing to keep open that binds an id to its
// task, so a task is identified by its id and creation time, which Windows
// code uses the same way; the exit bracket is the same as on Linux, and no
// exact exit instant is reported.

type key struct {
	pid, tid int
	creation time.Time
}

type entry struct {
	task     Task
	seen     uint32
	lastSeen time.Time
}

type sys struct {
	opts    *Options
	entries map[key]*entry
	gen     uint32
	reads   int
}

func (s *sys) init(opts *Options) error {
	s.opts = opts
	s.entries = make(map[key]*entry)
	return nil
}

func (s *sys) stats() Stats { return Stats{Reads: s.reads} }

func (s *sys) close() error { s.entries = nil; return nil }

func attachCleanup(*Sampler) {}

func (s *sys) refresh(dst *Sample) error {
	if s.entries == nil {
		return ErrClosed
	}
	s.gen++
	s.reads = 0
	wanted := func(pid int) bool {
		return len(s.opts.PIDs) == 0 || slices.Contains(s.opts.PIDs, pid)
	}
	var procs []cputime.ProcessInfo
	var firstErr error
	for info, err := range cputime.Processes() {
		s.reads++
		if err != nil {
			if errors.Is(err, cputime.ErrNotSupported) {
				return err
			}
			if firstErr == nil {
				firstErr = err
			}
			dst.Errors = append(dst.Errors, err)
			continue
		}
		if !wanted(info.ID) || (s.opts.Match != nil && !s.opts.Match(info.Name)) {
			continue
		}
		procs = append(procs, info)
	}
	if len(procs) == 0 && firstErr != nil {
		return firstErr
	}
	now := time.Now()
	for _, info := range procs {
		t := Task{PID: info.ID, Name: info.Name, Threads: info.Threads, Times: info.Times}
		dst.Processes = append(dst.Processes, s.track(key{pid: info.ID, creation: info.Times.Creation}, t, dst.First, now))
		if !s.opts.Threads {
			continue
		}
		for ti, err := range cputime.Threads(info.ID) {
			s.reads++
			if err != nil {
				if !errors.Is(err, cputime.ErrNotFound) {
					dst.Errors = append(dst.Errors, err)
				}
				break
			}
			tt := Task{PID: info.ID, TID: ti.ID, Name: info.Name, Times: ti.Times}
			dst.Threads = append(dst.Threads, s.track(key{pid: info.ID, tid: ti.ID, creation: ti.Times.Creation}, tt, dst.First, now))
		}
	}
	goneAt := time.Now()
	for k, e := range s.entries {
		if e.seen == s.gen {
			continue
		}
		x := Exited{Task: e.task, LastSeen: e.lastSeen, GoneAt: goneAt}
		x.Delta, x.New = 0, false
		if k.tid == 0 {
			dst.ExitedProcesses = append(dst.ExitedProcesses, x)
		} else {
			dst.ExitedThreads = append(dst.ExitedThreads, x)
		}
		delete(s.entries, k)
	}
	byID := func(a, b Task) int {
		if a.PID != b.PID {
			return a.PID - b.PID
		}
		return a.TID - b.TID
	}
	slices.SortFunc(dst.Processes, byID)
	slices.SortFunc(dst.Threads, byID)
	slices.SortFunc(dst.ExitedProcesses, func(a, b Exited) int { return byID(a.Task, b.Task) })
	slices.SortFunc(dst.ExitedThreads, func(a, b Exited) int { return byID(a.Task, b.Task) })
	return nil
}

// track records t under k and returns it with Delta and New set.
func (s *sys) track(k key, t Task, first bool, now time.Time) Task {
	e := s.entries[k]
	switch {
	case e == nil:
		e = &entry{}
		s.entries[k] = e
		if !first {
			t.New = true
			t.Delta = t.Times.Total()
		}
	default:
		// Windows' own counters never go back; keep ours from doing so
		// if a snapshot lags.
		t.Times.User = max(t.Times.User, e.task.Times.User)
		t.Times.Kernel = max(t.Times.Kernel, e.task.Times.Kernel)
		t.Delta = t.Times.Total() - e.task.Times.Total()
	}
	e.task, e.seen, e.lastSeen = t, s.gen, now
	return t
}
