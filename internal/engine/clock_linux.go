package engine

import (
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
)

// CPU clock kinds and ids (internal/kernel).
const (
	cpuclockProf  = kernel.ClockProf
	cpuclockVirt  = kernel.ClockVirt
	cpuclockSched = kernel.ClockSched
)

func processClock(pid int, kind int32) int32  { return kernel.ProcessClock(pid, kind) }
func threadClock(tid int, kind int32) int32   { return kernel.ThreadClock(tid, kind) }
func readClock(id int32) (uint64, unix.Errno) { return kernel.ReadClock(id) }

// cpuSample is one reading of a task's CPU clocks or files: the evidence
// splitRule divides.
type cpuSample = evidence

// sampleClocks reads the PROF, VIRT and SCHED clocks of a task whose clock
// ids are base|kind. SCHED is read last so that the exact total is never
// older than the samples that split it.
func sampleClocks(base int32) (cpuSample, unix.Errno) {
	utime, stime, e := kernel.ReadTicks(base)
	if e != 0 {
		return cpuSample{}, e
	}
	rtime, e := readClock(base | cpuclockSched)
	if e != 0 {
		return cpuSample{}, e
	}
	return cpuSample{UTime: utime, STime: stime, RTime: rtime}, 0
}

// userHZ is USER_HZ, the unit of the times in /proc stat files.
func userHZ() uint64 { return account.UserHZ() }
