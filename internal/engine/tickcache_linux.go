package engine

import (
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// A task's tick samples (its CPUCLOCK_VIRT and CPUCLOCK_PROF clocks) move
// only when a scheduler tick lands on it while it runs, while its exact
// total (CPUCLOCK_SCHED) moves at every context switch and tick. A reader
// that asks again and again (a handle, a pseudo-handle) reads the exact
// total every time and the samples only when the total has grown by a tick
// or more since they were read: one system call per read where three were.
// The evidence is then at most one tick of the task's own CPU time old,
// which bounds the split's lag by one tick whatever the task's number of
// threads (pacing on wall time would let a process running on n CPUs lag
// by n ticks) and needs no clock of its own. A stopped or idle task's
// total does not move, so its samples are read once, and it reads exactly
// as from any other path.

// schedTick is the scheduler tick (1/HZ): the resolution the kernel states
// for the tick-sampled CPU clocks (clock_getres of CPUCLOCK_PROF).
var schedTick = sync.OnceValue(func() int64 {
	var ts unix.Timespec
	_, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETRES, uintptr(processClock(0, cpuclockProf)), uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 || ts.Nano() <= 0 {
		return int64(time.Second / 100) // the coarsest HZ Linux has
	}
	return ts.Nano()
})

// tickCache holds the last tick samples of one task.
type tickCache struct {
	mu           sync.Mutex
	valid        bool
	utime, stime uint64 // ns
	rtimeAt      uint64 // the exact total when they were read
}

// sample reads the exact total of the task whose clock ids are base|kind,
// and its tick samples where they may have moved by a tick.
func (c *tickCache) sample(base int32) (cpuSample, unix.Errno) {
	rtime, e := readClock(base | cpuclockSched)
	if e != 0 {
		return cpuSample{}, e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || (rtime > c.rtimeAt && rtime-c.rtimeAt >= uint64(schedTick())) {
		utime, stime, e := kernel.ReadTicks(base)
		if e != 0 {
			return cpuSample{}, e
		}
		c.utime, c.stime = utime, stime
		c.rtimeAt, c.valid = rtime, true
	}
	return cpuSample{UTime: c.utime, STime: c.stime, RTime: rtime}, 0
}
