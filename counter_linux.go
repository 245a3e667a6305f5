package cputime

import "github.com/cputime/cputime/internal/engine"

// counterSys is what a CycleCounter holds: the engine's perf counters.
type counterSys struct{ c engine.CycleCounter }

func (s *counterSys) openThread(tid int) error  { return s.c.OpenThread(tid) }
func (s *counterSys) openProcess(pid int) error { return s.c.OpenProcess(pid) }
func (s *counterSys) close() error              { return s.c.Close() }

func (s *counterSys) read() (CycleCount, error) {
	raw, enabled, running, err := s.c.Read()
	if err != nil {
		return CycleCount{}, err
	}
	return scaleCount(raw, enabled, running), nil
}
