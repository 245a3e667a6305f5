package goroutines

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// threadCPU reads thread tid's CPU clock (CPUCLOCK_SCHED): its exact
// runtime in ns, readable by its own process alone.
func threadCPU(tid int) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(kernel.ThreadClock(tid, kernel.ClockSched), &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func ownThreads() ([]int, error) { return procfs.NewFS("").TIDs(os.Getpid()) }

// liveOwnThreads lists this process's threads, every one alive throughout
// the call among them (procfs.LiveTIDs): for opening an event on each.
func liveOwnThreads() ([]int, error) { return procfs.NewFS("").LiveTIDs(os.Getpid()) }

// threadClocks is the sampler's view of the thread clocks, which need no
// handle: a clock is named by its thread's id.
type threadClocks struct{}

func (threadClocks) list() ([]int, error) { return ownThreads() }

// read: an ended thread's clock can no longer be read (err).
func (threadClocks) read(tid int) (cpu int64, gone bool, err error) {
	cpu, err = threadCPU(tid)
	return cpu, err != nil, err
}

func (threadClocks) forget(int) {}
func (threadClocks) close()     {}
