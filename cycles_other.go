//go:build !linux && !windows

package cputime

// Cycle times are implemented on Linux and Windows only: here every query
// fails with ErrNotSupported.

func referenceFrequency() (CycleFrequency, error) { return CycleFrequency{}, errPlatform }

func (*Process) onCPUNanos() (uint64, error) { return 0, errPlatform }
func (*Thread) onCPUNanos() (uint64, error)  { return 0, errPlatform }

func appendIdleNanos(dst []uint64) ([]uint64, error) { return dst, errPlatform }

type counterSys struct{}

func (*counterSys) openThread(int) error      { return errPlatform }
func (*counterSys) openProcess(int) error     { return errPlatform }
func (*counterSys) read() (CycleCount, error) { return CycleCount{}, errPlatform }
func (*counterSys) close() error              { return nil }

func processCycleNanos(int) (uint64, bool, error) { return 0, false, nil }
func threadCycleNanos(int) (uint64, bool)         { return 0, false }
