package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// CPU clock ids, as include/linux/posix-timers.h builds them: the bitwise
// complement of the pid or tid shifted left by 3, the clock kind in the low
// two bits, and bit 2 set for a thread clock. Id 0 means the caller.
const (
	ClockProf   = 0 // user + kernel, tick-sampled
	ClockVirt   = 1 // user only, tick-sampled
	ClockSched  = 2 // exact on-CPU time (sum_exec_runtime), nanoseconds
	clockThread = 4
)

// ProcessClock returns the id of process pid's clock of the given kind
// (pid 0: the calling process).
func ProcessClock(pid int, kind int32) int32 { return int32(^pid)<<3 | kind }

// ThreadClock returns the id of thread tid's clock of the given kind (tid
// 0: the calling thread). Only threads of the calling process have one.
func ThreadClock(tid int, kind int32) int32 { return int32(^tid)<<3 | kind | clockThread }

// ReadClock reads a clock in nanoseconds. Process clocks accept any pid
// without a permission check; thread clocks only threads of the calling
// process. A pid or tid that does not exist gives EINVAL. RawSyscall: CPU
// clocks never block, and entering the scheduler would double the cost.
func ReadClock(id int32) (uint64, unix.Errno) {
	var ts unix.Timespec
	_, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		return 0, e
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec), 0
}

// ReadTicks reads the tick-sampled VIRT and PROF clocks of the task whose
// clock ids are base|kind: its user and kernel time as the scheduler tick
// sampled them, in ns, the evidence that splits its exact total.
func ReadTicks(base int32) (utime, stime uint64, e unix.Errno) {
	virt, e := ReadClock(base | ClockVirt)
	if e != 0 {
		return 0, 0, e
	}
	prof, e := ReadClock(base | ClockProf)
	if e != 0 {
		return 0, 0, e
	}
	if prof > virt {
		stime = prof - virt
	}
	return virt, stime, 0
}
