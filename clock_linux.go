package cputime

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
)

// CPU clock ids, as include/linux/posix-timers.h builds them: the bitwise
// complement of the pid or tid shifted left by 3, the clock kind in the low
// two bits, and bit 2 set for a thread clock. Id 0 means the caller.
const (
	cpuclockProf   = 0 // user + kernel, tick-sampled
	cpuclockVirt   = 1 // user only, tick-sampled
	cpuclockSched  = 2 // exact on-CPU time (sum_exec_runtime), nanoseconds
	cpuclockThread = 4
)

func processClock(pid int, kind int32) int32 { return int32(^pid)<<3 | kind }
func threadClock(tid int, kind int32) int32 {
	return int32(^tid)<<3 | kind | cpuclockThread
}

// readClock reads a clock in nanoseconds. Process clocks accept any pid
// without a permission check; thread clocks only threads of the calling
// process. A pid or tid that does not exist gives EINVAL. RawSyscall: CPU
// clocks never block, and entering the scheduler would double the cost.
func readClock(id int32) (uint64, unix.Errno) {
	var ts unix.Timespec
	_, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0, e
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec), 0
}

// cpuSample is one reading of a task's CPU clocks or files: the evidence
// splitRule divides.
type cpuSample = evidence

// sampleClocks reads the PROF, VIRT and SCHED clocks of a task whose clock
// ids are base|kind. SCHED is read last so that the exact total is never
// older than the samples that split it.
func sampleClocks(base int32) (cpuSample, unix.Errno) {
	virt, e := readClock(base | cpuclockVirt)
	if e != 0 {
		return cpuSample{}, e
	}
	prof, e := readClock(base | cpuclockProf)
	if e != 0 {
		return cpuSample{}, e
	}
	rtime, e := readClock(base | cpuclockSched)
	if e != 0 {
		return cpuSample{}, e
	}
	var stime uint64
	if prof > virt {
		stime = prof - virt
	}
	return cpuSample{UTime: virt, STime: stime, RTime: rtime}, 0
}

// userHZ is USER_HZ, the unit of the times in /proc stat files.
func userHZ() uint64 { return account.UserHZ() }

// bootOffset is the process's one CLOCK_REALTIME − CLOCK_BOOTTIME, in ns.
func bootOffset() int64 { return account.BootOffset() }
