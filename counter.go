package cputime

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// CycleCounter counts the core cycles a thread or a process uses, with the
// processor's hardware performance counters (Linux perf_event_open,
// PERF_COUNT_HW_CPU_CYCLES, user and kernel mode). Unlike cycle times,
// these are the core's own clock cycles: they slow down and speed up with
// the core's frequency and stop while it stalls in a low-power state.
//
// A counter counts only from the moment it was opened: it cannot know what
// its task did before. It is an option for measuring a region of work, not
// a substitute for CycleTime.
//
// It needs a performance monitoring unit (PMU) the kernel can use, which
// most virtual machines do not offer, and a perf_event_paranoid setting
// that lets the caller count kernel-mode cycles (at most 1, or
// CAP_PERFMON). Where either is missing, opening fails with an error that
// says which: ErrNotSupported without a PMU, ErrAccessDenied when only the
// permission is missing.
//
// On Windows, which offers no unprivileged interface to the PMU for one
// thread or process (its performance counters are reached through
// system-wide kernel tracing sessions that need administrator rights),
// opening a counter always fails with ErrNotSupported; the native cycle
// times (CycleTime) are there instead.
//
// A CycleCounter is safe for concurrent use. Close it when done: it holds
// one file descriptor per thread it counts.
type CycleCounter struct {
	sys counterSys
}

// CycleCount is one reading of a CycleCounter.
type CycleCount struct {
	// Cycles is the number of core cycles counted since the counter was
	// opened. When the kernel had to share the hardware counters among more
	// events than they hold, it counted only part of the time, and Cycles is
	// scaled up from that part (Raw × Enabled / Running): an estimate.
	Cycles uint64
	// Raw is the count actually made, over Running.
	Raw uint64
	// Enabled is how long the counter was enabled while its tasks ran,
	// Running how long it was actually counting; for a process, summed over
	// its threads.
	Enabled, Running time.Duration
}

// Scaled reports whether Cycles is an estimate scaled up from a count made
// over only part of the time.
func (c CycleCount) Scaled() bool { return c.Running < c.Enabled }

// OpenThreadCycleCounter opens a counter of the core cycles of thread tid,
// in any process the caller may trace, from now on.
func OpenThreadCycleCounter(tid int) (*CycleCounter, error) {
	if err := checkID("thread", tid); err != nil {
		return nil, err
	}
	c := &CycleCounter{}
	if err := c.sys.openThread(tid); err != nil {
		return nil, fmt.Errorf("opening a cycle counter on thread %d: %w", tid, err)
	}
	return c, nil
}

// OpenProcessCycleCounter opens a counter of the core cycles of process
// pid, from now on: of all its threads, those it creates later included
// and those that exit still counted. A thread that is being created while
// the counter opens may be missed.
func OpenProcessCycleCounter(pid int) (*CycleCounter, error) {
	if err := checkID("process", pid); err != nil {
		return nil, err
	}
	c := &CycleCounter{}
	if err := c.sys.openProcess(pid); err != nil {
		return nil, fmt.Errorf("opening a cycle counter on process %d: %w", pid, err)
	}
	return c, nil
}

// Read returns the cycles counted since the counter was opened.
func (c *CycleCounter) Read() (CycleCount, error) {
	r, err := c.sys.read()
	if err != nil {
		return CycleCount{}, fmt.Errorf("reading a cycle counter: %w", err)
	}
	return r, nil
}

// Close releases the counter; reading it afterwards fails with ErrClosed.
func (c *CycleCounter) Close() error { return c.sys.close() }

// scaleCount turns a raw count into CycleCount, scaling it for the time the
// counter was enabled but not running (multiplexed), in 128 bits.
func scaleCount(raw, enabled, running uint64) CycleCount {
	c := CycleCount{Raw: raw, Cycles: raw, Enabled: time.Duration(enabled), Running: time.Duration(running)}
	if running > 0 && running < enabled {
		hi, lo := bits.Mul64(raw, enabled)
		if hi >= running {
			c.Cycles = math.MaxUint64
		} else {
			c.Cycles, _ = bits.Div64(hi, lo, running)
		}
	}
	return c
}
