package cputime

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
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
	return cpuSample{utime: virt, stime: stime, rtime: rtime}, 0
}

// userHZ is the unit of the times in /proc stat files (USER_HZ, the
// clock_t of times(2)): 100 on every Linux architecture Go supports, but
// the kernel states it in the auxiliary vector (AT_CLKTCK), so take it from
// there as sysconf(_SC_CLK_TCK) does.
var userHZ = sync.OnceValue(func() uint64 {
	const atClktck = 17 // AT_CLKTCK, include/uapi/linux/auxvec.h
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atClktck && kv[1] > 0 {
				return uint64(kv[1])
			}
		}
	}
	return 100
})

// bootOffset returns CLOCK_REALTIME − CLOCK_BOOTTIME in nanoseconds, now:
// the wall-clock instant of boot as the system clock sees it at this moment.
// Reading it at query time, rather than using /proc/stat's btime (whole
// seconds, and stale after every clock step), keeps creation times consistent
// with time.Now even after the clock is set.
//
// CLOCK_BOOTTIME costs a system call from Go; CLOCK_MONOTONIC, inside every
// time.Now, does not. The two advance together except while the machine is
// suspended, so we take BOOTTIME − MONOTONIC from a reference refreshed at
// most once a second, and the wall clock afresh from each time.Now. After a
// resume from suspend, creation times can be off by the suspended time for
// at most that second.
func bootOffset() int64 {
	now := time.Now()
	r := bootRef.Load()
	if r == nil || now.Sub(r.at) > time.Second || now.Before(r.at) {
		r = newBootReference()
		bootRef.Store(r)
	}
	boot := r.boot + int64(now.Sub(r.at)) // monotonic elapsed since the reference
	fresh := now.UnixNano() - boot
	// The wall and monotonic readings inside time.Now are taken a few
	// nanoseconds apart, so fresh jitters by that much from call to call.
	// Keep the last offset unless the clock was really stepped, so that a
	// task's creation time reads the same in every query.
	if last := stableOffset.Load(); last != 0 && fresh-last < offsetStep && last-fresh < offsetStep {
		return last
	}
	stableOffset.Store(fresh)
	return fresh
}

// offsetStep is the smallest change of CLOCK_REALTIME − CLOCK_BOOTTIME taken
// as a step of the clock rather than jitter: far above the jitter (tens of
// nanoseconds), far below a creation time's precision (half a tick, 5 ms).
const offsetStep = int64(100 * time.Microsecond)

var stableOffset atomic.Int64

// bootReference pairs a CLOCK_BOOTTIME reading with the time.Time (and so
// the monotonic reading) taken at the same moment.
type bootReference struct {
	at   time.Time
	boot int64 // ns
}

var bootRef atomic.Pointer[bootReference]

func newBootReference() *bootReference {
	var b1, b2 unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &b1)
	at := time.Now()
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &b2)
	return &bootReference{at: at, boot: (b1.Nano() + b2.Nano()) / 2}
}

// bootTicksToUnixNano converts a start time in USER_HZ ticks since boot to
// Unix nanoseconds. The kernel truncates the start instant to a whole tick,
// so the true instant lies in [ticks, ticks+1): adding half a tick makes the
// estimate unbiased, with an error of at most half a tick (5 ms).
func bootTicksToUnixNano(ticks uint64, offset int64) int64 {
	hz := userHZ()
	ns := ticks/hz*1e9 + (ticks%hz)*1e9/hz + 1e9/hz/2
	return offset + int64(ns)
}
