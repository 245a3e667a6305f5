// Package freq finds the rate of the reference clock in whose ticks cycle
// times are counted: the time-stamp counter (TSC) on amd64, the generic
// timer on arm64. The root package's ReferenceFrequency is its only user;
// the root's FrequencySource constants are this package's Source* strings.
//
// Sources, cheapest and best first; the first that answers wins:
//
//   - amd64, any OS: CPUID leaf 0x15 (crystal × ratio, recent Intel) or the
//     hypervisor's leaf 0x40000010 (TSC kHz), where stated. No system call.
//   - Linux on amd64 under KVM: the kvm-clock page the kernel maps into every
//     process beside the vDSO ([vvar_vclock], or page 1 of [vvar] before
//     Linux 6.13): the hypervisor's TSC-to-nanoseconds scale, from which the
//     kernel computes its own TSC frequency (kvm_get_tsc_khz). One read of
//     /proc/self/maps.
//   - Linux on amd64: the perf_event mmap page of a self-monitoring dummy
//     software event (allowed at perf_event_paranoid 2): time_mult and
//     time_shift are the kernel's sched_clock TSC-to-nanoseconds scale,
//     derived from the TSC frequency the kernel calibrated (tsc_khz), and
//     published only where sched_clock is that TSC scale (cap_user_time).
//     Four system calls.
//   - amd64: calibration against CLOCK_MONOTONIC_RAW (Linux) or
//     QueryPerformanceCounter (Windows): 40 to 80 ms asleep.
//   - amd64: CPUID leaf 0x16's base frequency, in whole MHz, only if
//     calibration fails.
//   - arm64 Linux: CNTFRQ_EL0.
package freq

import "errors"

// ErrNotSupported is wrapped by every error for a machine whose reference
// frequency cannot be found; the root package reports it as its own
// ErrNotSupported.
var ErrNotSupported = errors.New("not supported")

// Frequency is a reference clock's rate and where it was found.
type Frequency struct {
	Hz     uint64 // cycles per second
	Source string // one of the Source constants
}

// The sources, as the root package names them (its FrequencySource).
const (
	SourceCPUIDCrystal    = "cpuid 0x15 (TSC/crystal ratio)"
	SourceCPUIDHypervisor = "cpuid 0x40000010 (hypervisor)"
	SourceKVMClock        = "kernel's TSC frequency (kvm-clock page)"
	SourcePerfMmap        = "kernel's TSC frequency (perf_event mmap page)"
	SourceCalibrated      = "calibrated against CLOCK_MONOTONIC_RAW"
	SourceCalibratedQPC   = "calibrated against QueryPerformanceCounter"
	SourceCPUIDBase       = "cpuid 0x16 (base frequency)"
	SourceCNTFRQ          = "CNTFRQ_EL0"
)

// Reference returns the reference frequency from the first source that
// answers (see the package doc); it may sleep up to about 100 ms when it
// must calibrate. Callers compute it once.
func Reference() (Frequency, error) {
	return reference()
}
