package sampler

import "github.com/cputime/cputime/internal/engine"

// NewWithEngine is New over eng: its proc root (a test's hidepid=1
// instance), its use of pidfds, and its clocks (a test's, which it steps).
func NewWithEngine(opts Options, eng *engine.Engine) (*Sampler, error) {
	return newSampler(opts, sys{eng: eng})
}

// SetAfterProcClock has s call f with a process's pid right after each
// read of its CPU clock, before its state is looked at (nil: none).
func SetAfterProcClock(s *Sampler, f func(pid int)) { s.sys.st.afterProcClock = f }
