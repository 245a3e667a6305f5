package cputime

import "fmt"

// Windows offers no unprivileged interface to the processor's performance
// counters for one thread or process: they are reached through kernel
// tracing sessions (ETW PMC sources) that need administrator rights and
// sample the whole system. CycleCounter is not available; the native cycle
// times (CycleTime) are.
var errNoCounter = fmt.Errorf("hardware cycle counters on windows: %w (Windows has no unprivileged per-thread interface to the performance monitoring unit; use CycleTime for the cycles Windows counts)", ErrNotSupported)

type counterSys struct{}

func (*counterSys) openThread(int) error      { return errNoCounter }
func (*counterSys) openProcess(int) error     { return errNoCounter }
func (*counterSys) read() (CycleCount, error) { return CycleCount{}, errNoCounter }
func (*counterSys) close() error              { return nil }
