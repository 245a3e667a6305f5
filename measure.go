package cputime

import (
	"fmt"
	"runtime"
	"time"

	"github.com/cputime/cputime/internal/account"
)

// Usage is an amount of CPU time used, by mode.
type Usage struct {
	Kernel time.Duration // in kernel mode
	User   time.Duration // in user mode
}

// Total returns Kernel + User.
func (u Usage) Total() time.Duration { return u.Kernel + u.User }

// Measure runs f and returns the CPU time that the calling goroutine's OS
// thread used while f ran. For the duration, the goroutine is locked to its
// thread (runtime.LockOSThread), so the thread's CPU clock measures f and
// nothing else that Go schedules. It is StartRegion, f, End.
//
// What is counted: everything the thread executes between the two readings:
// f's own code, system calls f makes (as kernel time), the runtime's work on
// that thread on f's behalf (allocation, and the GC mark assists that f's
// allocation is charged with), and signal handlers that run on it.
//
// What is not counted: work done for f on other threads: goroutines f
// starts, the garbage collector's background workers, the runtime's
// sysmon, and the kernel's work in other contexts (page reclaim, softirqs
// on other CPUs, I/O completion). Time f spends blocked (on a channel, a
// lock, I/O, sleep) is not CPU time and is not counted either, although the
// thread stays reserved for f while it blocks.
//
// Precision: the total is exact to the nanosecond on Linux (the thread's
// CPU clock). The split between kernel and user time is sampled by the
// kernel at each scheduler tick (every 1 to 10 ms, HZ): the region's split
// is its total divided in the ratio of the ticks that landed in it, and for
// a region with no tick in it, in the thread's ratio since it started.
//
// On Windows, the thread's kernel and user times (GetThreadTimes) advance
// only at the clock interrupt, by whole intervals of the timer (15.625 ms
// unless a program raised its rate), so a region shorter than that may
// measure 0 or a whole interval. Where the thread's cycle count can be read
// and its rate is known (QueryThreadCycleTime and ReferenceFrequency, on
// amd64), the total is the cycles the region used, in nanoseconds, exact to
// the cycle, and the interrupt-sampled times only split it, as on Linux;
// otherwise (Wine, arm64), the total is in whole intervals. The first
// Measure may then calibrate the reference frequency (about 40 ms, once).
//
// If f panics, the thread is unlocked and the panic goes on.
func Measure(f func()) (Usage, error) {
	r, err := StartRegion()
	if err != nil {
		return Usage{}, err
	}
	ended := false
	defer func() {
		if !ended {
			r.abandon()
		}
	}()
	f()
	ended = true
	return r.End()
}

// Region is a measurement of the CPU time of a stretch of Go code, started
// by StartRegion and ended by End on the same goroutine, for code that
// cannot be wrapped in a function for Measure (a request handler's
// middleware, a benchmark's loop).
type Region struct {
	tid   int
	start cpuSample
}

// StartRegion locks the calling goroutine to its OS thread and reads the
// thread's CPU clocks. Call End exactly once, on the same goroutine.
func StartRegion() (Region, error) {
	runtime.LockOSThread()
	s, err := threadSample()
	if err != nil {
		runtime.UnlockOSThread()
		return Region{}, fmt.Errorf("starting region: %w", err)
	}
	return Region{tid: gettid(), start: s}, nil
}

// End reads the thread's CPU clocks again, unlocks the goroutine from its
// thread, and returns the CPU time the thread used since StartRegion. It
// fails with ErrInvalidArgument if called on another thread than
// StartRegion was.
func (r Region) End() (Usage, error) {
	end, err := threadSample()
	if tid := gettid(); tid != r.tid {
		return Usage{}, fmt.Errorf("ending region: %w: started on thread %d, ended on thread %d (another goroutine?)", ErrInvalidArgument, r.tid, tid)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return Usage{}, fmt.Errorf("ending region: %w", err)
	}
	return regionUsage(r.start, end), nil
}

func (r Region) abandon() {
	if gettid() == r.tid {
		runtime.UnlockOSThread()
	}
}

// regionUsage is the usage between two samples of one thread, split by
// account.SplitBetween.
func regionUsage(start, end cpuSample) Usage {
	user, kernel := account.SplitBetween(start, end)
	return Usage{Kernel: time.Duration(kernel), User: time.Duration(user)}
}
