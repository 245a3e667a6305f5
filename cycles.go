package cputime

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/cputime/cputime/internal/freq"
)

// FrequencySource says where a CycleFrequency comes from.
type FrequencySource string

// The sources of the reference frequency, in the order they are tried on
// each architecture. The first that answers is used; calibration, the only
// one that takes time, comes last but one.
const (
	// SourceCPUIDCrystal: amd64 CPUID leaf 0x15, the TSC's ratio to the
	// core crystal clock and the crystal's frequency, both stated by the CPU
	// (recent Intel processors). Exact.
	SourceCPUIDCrystal FrequencySource = freq.SourceCPUIDCrystal
	// SourceCPUIDHypervisor: amd64 CPUID leaf 0x40000010, the TSC frequency
	// in kHz stated by the hypervisor (VMware, and KVM guests configured to
	// offer it).
	SourceCPUIDHypervisor FrequencySource = freq.SourceCPUIDHypervisor
	// SourceKVMClock: Linux on amd64 in a KVM guest with a stable clock: the
	// TSC frequency the guest kernel took from the hypervisor, computed as
	// the kernel computes it (kvm_get_tsc_khz) from the kvm-clock scale the
	// kernel maps read-only into every process beside the vDSO. It is the
	// figure the kernel logs as "tsc: Detected ... MHz" and scales the TSC
	// clock source by, to the kHz. Four system calls (an open, reads and a
	// close of /proc/self/maps, to find the page) and no sleep.
	SourceKVMClock FrequencySource = freq.SourceKVMClock
	// SourcePerfMmap: Linux on amd64 where the scheduler's clock is the TSC
	// (bare metal, most non-KVM guests): the TSC frequency the kernel
	// calibrated (tsc_khz, after its refinement, the figure it logs as
	// "tsc: Refined TSC clocksource calibration"), read from the TSC-to-ns
	// scale it publishes in the mmap page of a perf event: a dummy software
	// event on the calling thread, user mode only, which the default
	// perf_event_paranoid (2) allows any process. The scale recovers the
	// kHz exactly (its rounding error is below 1e-9). Four system calls
	// (perf_event_open, mmap, munmap, close) and no sleep.
	SourcePerfMmap FrequencySource = freq.SourcePerfMmap
	// SourceCalibrated: the TSC measured against CLOCK_MONOTONIC_RAW, once,
	// within a relative 1e-4 (in practice about 1e-6), where neither the CPU
	// nor the kernel states it. Where the kernel's clock source is the TSC,
	// as on most machines, CLOCK_MONOTONIC_RAW is itself the TSC scaled by
	// the kernel's figure for its frequency, so the calibration recovers
	// that figure; it costs 40 to 80 ms of wall time.
	SourceCalibrated FrequencySource = freq.SourceCalibrated
	// SourceCalibratedQPC: on Windows, the TSC measured once against
	// QueryPerformanceCounter, within a relative 1e-4. Windows derives
	// QueryPerformanceCounter from the TSC itself wherever the TSC is
	// invariant, so the calibration recovers the kernel's own figure.
	SourceCalibratedQPC FrequencySource = freq.SourceCalibratedQPC
	// SourceCPUIDBase: amd64 CPUID leaf 0x16, the processor's base frequency
	// in whole MHz, used only if calibration fails: on most processors that
	// state it, the TSC runs at the base frequency, but only to within the
	// MHz rounding.
	SourceCPUIDBase FrequencySource = freq.SourceCPUIDBase
	// SourceCNTFRQ: arm64 CNTFRQ_EL0, the frequency of the generic timer as
	// the firmware programmed it; the kernel uses the same figure.
	SourceCNTFRQ FrequencySource = freq.SourceCNTFRQ
)

// frequencyFrom converts the internal package's answer (freq.Reference) to
// the exported one: its ErrNotSupported becomes this package's.
func frequencyFrom(f freq.Frequency, err error) (CycleFrequency, error) {
	if err != nil {
		if errors.Is(err, freq.ErrNotSupported) {
			err = notSupportedError{err}
		}
		return CycleFrequency{}, err
	}
	return CycleFrequency{Hz: f.Hz, Source: FrequencySource(f.Source)}, nil
}

// notSupportedError keeps the message of an internal error and makes it
// match ErrNotSupported.
type notSupportedError struct{ err error }

func (e notSupportedError) Error() string   { return e.err.Error() }
func (e notSupportedError) Unwrap() []error { return []error{e.err, ErrNotSupported} }

// CycleFrequency is the rate of the reference clock in whose ticks cycle
// times are counted.
type CycleFrequency struct {
	// Hz is the number of reference cycles per second.
	Hz uint64
	// Source says where Hz comes from.
	Source FrequencySource
}

// Cycles returns the reference cycles in d of on-CPU time: d × Hz, exact
// to within one cycle (rounded down) and without overflow; a negative d
// gives 0 and a result beyond 2^64-1 gives math.MaxUint64.
func (f CycleFrequency) Cycles(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return cyclesFromNanos(uint64(d), f.Hz)
}

// String returns the frequency in Hz with its source.
func (f CycleFrequency) String() string {
	return fmt.Sprintf("%d Hz (%s)", f.Hz, f.Source)
}

// cyclesFromNanos returns ns × hz / 1e9, rounded down, computed in 128 bits
// so that no product overflows (ns up to 2^64 and hz up to 2^64 both fit);
// it saturates at math.MaxUint64 when the quotient does not fit in 64 bits.
func cyclesFromNanos(ns, hz uint64) uint64 {
	hi, lo := bits.Mul64(ns, hz)
	if hi >= 1e9 {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, 1e9)
	return q
}

// ReferenceFrequency returns the frequency of the reference clock that
// cycle times count.
//
// Cycle times are the answers of QueryThreadCycleTime, QueryProcessCycleTime
// and QueryIdleProcessorCycleTime: Process.CycleTime, Thread.CycleTime and
// IdleProcessorCycleTimes. Do not convert them to elapsed time, as the
// Windows documentation says of its own: they count ticks of a timer the
// CPU provides, whose behaviour varies between processors. Use Times for
// time.
//
// On Windows the cycles are ticks of the time-stamp counter (TSC), charged
// to a thread at each context switch and interrupt. Linux keeps no such
// count, so on Linux cputime derives cycle times from the scheduler's exact
// on-CPU time (the same nanoseconds as Times.Total) multiplied by this
// frequency: the rate of the TSC on amd64, of the generic timer
// (CNTFRQ_EL0) on arm64. These are reference cycles, not core cycles: a
// reference clock ticks at one rate whatever the core's clock speed, so
// frequency scaling, turbo, stalls and a sibling hyperthread sharing the
// core are all invisible in them. A thread that ran one second has used Hz
// cycles, however much work it did in that second. For core cycles, open a
// CycleCounter where the machine has a hardware performance monitoring
// unit. Because they are the exact nanoseconds scaled by a constant, cycle
// times never decrease between reads of one task, agree with Times to
// within one cycle, are available for every task whose Times are, and
// include, for a process, its threads that have exited.
//
// The frequency, on amd64, is the TSC's: stated by CPUID where the CPU or
// hypervisor states it; else, on Linux, the figure the kernel itself uses,
// read without privileges where the kernel publishes it (the kvm-clock page
// in a KVM guest, the perf_event mmap page where the scheduler's clock is
// the TSC); else calibrated against CLOCK_MONOTONIC_RAW (Linux) or
// QueryPerformanceCounter (Windows), which costs about 40 ms of wall time,
// at most about 100 ms. The Source field says which answered. On Linux on
// arm64 it is the generic timer's. On other architectures and platforms it
// fails with ErrNotSupported; on Windows the cycle times themselves, which
// Windows counts natively, are still available. Nothing runs at import:
// the first call finds the frequency (microseconds, unless it must
// calibrate), and every later call returns the same result, or error.
//
// On Windows, cycle times are the native answers of the three calls, not
// derived from times: ReferenceFrequency is then only the rate at which
// they advance, for reading them. Windows stops charging a thread's cycles
// while the processor serves interrupts, so they track, but do not equal,
// Times.Total × Hz; Times, which Windows samples at each clock interrupt,
// is the coarser of the two.
func ReferenceFrequency() (CycleFrequency, error) {
	return referenceFrequency()
}

// CycleTime returns the reference cycles the process has used since it
// started, in user and kernel mode, over all its threads, exited ones
// included: QueryProcessCycleTime. It is the process's exact on-CPU time
// (Times.Total) × ReferenceFrequency; see there for what these cycles are,
// and do not convert them to time. For the CurrentProcess pseudo-handle it
// costs one clock_gettime; through a handle, one more system call, which
// checks that the clock read was the handle's own process. Once the process
// has exited, it returns the final count, as Times returns the final times.
//
// On Windows it is the native QueryProcessCycleTime through the handle:
// the time-stamp counter ticks Windows charged to the process's threads,
// exact at each context switch, needing no reference frequency.
func (p *Process) CycleTime() (uint64, error) {
	if err := need(p.access, ProcessQueryLimitedInformation); err != nil {
		return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, err)
	}
	return p.cycleTime()
}

// CycleTime returns the reference cycles the thread has used since it
// started, in user and kernel mode: QueryThreadCycleTime. It is the
// thread's exact on-CPU time (Times.Total) × ReferenceFrequency; see there
// for what these cycles are. Through CurrentThread it costs one
// clock_gettime; through a handle to a thread of the calling process, one
// more system call (the pidfd check), and to another process's thread, a
// pread of its schedstat file. On Windows it is the native
// QueryThreadCycleTime through the handle.
func (t *Thread) CycleTime() (uint64, error) {
	if err := need(t.access, ThreadQueryLimitedInformation); err != nil {
		return 0, t.errorf("reading cycle time of", err)
	}
	return t.cycleTime()
}

// ProcessCycleTime returns the cycle time of process pid: OpenProcess,
// CycleTime, Close, with the same answer. On Linux it is one read of the
// process's CPU clock (no file opened) where that answers as the handle
// would: see the platform notes of CycleTime.
func ProcessCycleTime(pid int) (uint64, error) {
	if pid == getpid() {
		return CurrentProcess().CycleTime()
	}
	if ns, ok, err := processCycleNanos(pid); ok {
		if err != nil {
			return 0, err
		}
		f, err := referenceFrequency()
		if err != nil {
			return 0, err
		}
		return cyclesFromNanos(ns, f.Hz), nil
	}
	p, err := openProcess(pid, defaultProcessAccess, false)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return p.CycleTime()
}

// ThreadCycleTime returns the cycle time of thread tid: OpenThread,
// CycleTime, Close, with the same answer. On Linux, for a thread of the
// calling process it is one read of the thread's CPU clock.
func ThreadCycleTime(tid int) (uint64, error) {
	if ns, ok := threadCycleNanos(tid); ok {
		f, err := referenceFrequency()
		if err != nil {
			return 0, err
		}
		return cyclesFromNanos(ns, f.Hz), nil
	}
	t, err := OpenThread(tid)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	return t.CycleTime()
}

// IdleProcessorCycleTimes returns, for each logical processor, the reference
// cycles it has spent idle since boot: QueryIdleProcessorCycleTime. Index i
// is CPU number i; the slice covers every CPU the system has present,
// including any that are offline (see the platform notes below).
//
// On Linux the idle time is the kernel's own idle accounting, /proc/stat's
// idle + iowait columns: complete up to the moment of the read, the sleep in
// progress included, but counted in USER_HZ ticks (10 ms). Where the kernel
// has an active cpuidle driver, cputime refines it between ticks with the
// cpuidle residency counters (/sys/devices/system/cpu/cpuN/cpuidle/stateK/
// time, summed over the states, in microseconds). Those are exact, but
// brought up to date only when the CPU leaves an idle state: a CPU of an
// idle machine can sleep for seconds without its residency moving, so the
// residency alone would report it as of when it fell asleep. cputime
// carries the residency's growth onto /proc/stat's scale and holds the
// result between /proc/stat's value less one tick and /proc/stat's value:
// a CPU that is awake gets microsecond steps; one asleep right now is at
// most about two ticks behind. Each call reads /proc/stat once, whose size
// grows with the number of CPUs and interrupts.
//
// An offline CPU runs no idle loop and is not listed in /proc/stat: its
// entry keeps the last value this process saw for it (0 if it has been
// offline since this process first asked). No entry ever decreases between
// reads in one process.
//
// On Windows it is the native QueryIdleProcessorCycleTime, one entry per
// active processor: the cycles of the processor's idle thread. That call
// answers for the calling thread's processor group only; on a machine with
// several groups (more than 64 logical processors) each group is read in
// turn with QueryIdleProcessorCycleTimeEx, so that index i is processor i
// of the machine. Under Wine, which does not implement it (calling it
// aborts the process), it fails with ErrNotSupported instead.
func IdleProcessorCycleTimes() ([]uint64, error) {
	return AppendIdleProcessorCycleTimes(nil)
}

// AppendIdleProcessorCycleTimes appends the values IdleProcessorCycleTimes
// returns to dst and returns the extended slice: with a dst of enough
// capacity, repeated reads allocate nothing.
func AppendIdleProcessorCycleTimes(dst []uint64) ([]uint64, error) {
	return appendIdleCycles(dst)
}
