package cputime

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// archFrequency returns the TSC frequency: stated by CPUID where the CPU or
// hypervisor states it, else calibrated, else CPUID's base frequency.
func archFrequency() (CycleFrequency, error) {
	if f, ok := statedTSCFrequency(); ok {
		return f, nil
	}
	f, err := calibrateTSC()
	if err == nil {
		return f, nil
	}
	if f, ok := baseFrequency(); ok {
		return f, nil
	}
	return CycleFrequency{}, fmt.Errorf("finding the TSC frequency: %w", err)
}

// Calibration: the TSC is read on either side of a CLOCK_MONOTONIC_RAW read
// at the start and at the end of an interval; the frequency is the ratio of
// the TSC and clock differences. The error of one endpoint is at most half
// the TSC width of its bracket, so the relative error of the frequency is
// at most (width0 + width1) / 2 / (TSC ticks in the interval). A bracket is
// a few hundred nanoseconds wide (a system call; more under a hypervisor),
// and the best of several is kept, so a 40 ms interval bounds the error to
// about 1e-5; two halves must also agree, which catches a clock step or a
// descheduling the bracket widths would not.
const (
	calibrationHalf     = 20 * time.Millisecond
	calibrationRounds   = 2    // at most 2 × 40 ms of wall time
	calibrationBound    = 2e-5 // accept a round whose error bound is below this
	calibrationAgree    = 5e-5 // and whose halves agree to within this
	calibrationMaxError = 1e-4 // the promise: never report a worse figure
	bracketTries        = 7
)

// tscSample is one bracketed reading: the TSC at the midpoint of a
// CLOCK_MONOTONIC_RAW read, the clock's value, and the bracket's width.
type tscSample struct {
	tsc, ns, width uint64
}

func sampleTSC() (tscSample, error) {
	best := tscSample{width: ^uint64(0)}
	for range bracketTries {
		t0 := rdtsc()
		ns, e := readClock(unix.CLOCK_MONOTONIC_RAW)
		t1 := rdtsc()
		if e != 0 {
			return tscSample{}, fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", e)
		}
		if t1 < t0 {
			continue // migrated to a CPU whose TSC is behind: try again
		}
		if w := t1 - t0; w < best.width {
			best = tscSample{tsc: t0 + w/2, ns: ns, width: w}
		}
	}
	if best.width == ^uint64(0) {
		return tscSample{}, fmt.Errorf("the TSC went backwards in every read: %w", ErrNotSupported)
	}
	return best, nil
}

// rate returns the TSC frequency between two samples and its error bound.
func rate(a, b tscSample) (hz, bound float64) {
	dt, dns := float64(b.tsc)-float64(a.tsc), float64(b.ns)-float64(a.ns)
	if dt <= 0 || dns <= 0 {
		return 0, 1
	}
	return dt / dns * 1e9, float64(a.width+b.width) / 2 / dt
}

func calibrateTSC() (CycleFrequency, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bestHz, bestBound := 0.0, 1.0
	for range calibrationRounds {
		var s [3]tscSample
		for i := range s {
			if i > 0 {
				time.Sleep(calibrationHalf)
			}
			var err error
			if s[i], err = sampleTSC(); err != nil {
				return CycleFrequency{}, err
			}
		}
		h1, _ := rate(s[0], s[1])
		h2, _ := rate(s[1], s[2])
		hz, bound := rate(s[0], s[2])
		if d := (h1 - h2) / hz; d > calibrationAgree || d < -calibrationAgree {
			continue
		}
		if bound < bestBound {
			bestHz, bestBound = hz, bound
		}
		if bound < calibrationBound {
			break
		}
	}
	if bestBound > calibrationMaxError {
		return CycleFrequency{}, fmt.Errorf("calibrating the TSC against CLOCK_MONOTONIC_RAW: no agreement within %g", calibrationMaxError)
	}
	return CycleFrequency{Hz: uint64(bestHz + 0.5), Source: SourceCalibrated}, nil
}
