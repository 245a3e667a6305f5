//go:build (linux || windows) && amd64

package freq

import (
	"fmt"
	"runtime"
	"time"
)

// reference returns the TSC frequency (on Windows, the rate of the cycle
// times it reports on amd64): stated by CPUID where the CPU or hypervisor
// states it, else the kernel's own figure where the kernel publishes it
// (kernelFrequency, per system), else calibrated against the system's
// reference clock (calibrateTSC, per system), else CPUID's base frequency.
func reference() (Frequency, error) {
	if f, ok := statedTSCFrequency(); ok {
		return f, nil
	}
	if f, ok := kernelFrequency(); ok {
		return f, nil
	}
	f, err := calibrateTSC()
	if err == nil {
		return f, nil
	}
	if f, ok := baseFrequency(); ok {
		return f, nil
	}
	return Frequency{}, fmt.Errorf("finding the TSC frequency: %w", err)
}

// Calibration: the TSC is read around a reading of a reference clock at
// the start, the middle and the end of an interval; the frequency is the
// ratio of the TSC and reference differences. The error of one endpoint is
// at most half the TSC width of its bracket, so the relative error of the
// frequency is at most (width0 + width1) / 2 / (TSC ticks in the
// interval); the two halves must also agree, which catches a clock step or
// a descheduling the bracket widths would not. Each system's sampler
// (calibrate_linux_amd64.go, calibrate_windows_amd64.go) says how narrow its
// brackets are.
const (
	calibrationHalf     = 20 * time.Millisecond
	calibrationRounds   = 2    // at most 2 × 40 ms of wall time
	calibrationBound    = 2e-5 // accept a round whose error bound is below this
	calibrationAgree    = 5e-5 // and whose halves agree to within this
	calibrationMaxError = 1e-4 // the promise: never report a worse figure
)

// tscPoint is the TSC at the moment the reference clock read ref (in the
// reference's own units), within width TSC ticks.
type tscPoint struct {
	tsc, width, ref uint64
}

// tscRate returns the TSC frequency between two points, given the
// reference clock's rate, and its relative error bound.
func tscRate(a, b tscPoint, refHz float64) (hz, bound float64) {
	if b.tsc <= a.tsc || b.ref <= a.ref {
		return 0, 1
	}
	dt, dref := float64(b.tsc-a.tsc), float64(b.ref-a.ref)
	return dt / dref * refHz, float64(a.width+b.width) / 2 / dt
}

// calibrateAgainst calibrates the TSC against the reference clock named
// clock, whose rate is refHz, read by sample.
func calibrateAgainst(clock string, refHz float64, sample func() (tscPoint, error), source string) (Frequency, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bestHz, bestBound := 0.0, 1.0
	for range calibrationRounds {
		var p [3]tscPoint
		for i := range p {
			if i > 0 {
				time.Sleep(calibrationHalf)
			}
			var err error
			if p[i], err = sample(); err != nil {
				return Frequency{}, fmt.Errorf("calibrating the TSC against %s: %w", clock, err)
			}
		}
		h1, _ := tscRate(p[0], p[1], refHz)
		h2, _ := tscRate(p[1], p[2], refHz)
		hz, bound := tscRate(p[0], p[2], refHz)
		if d := (h1 - h2) / hz; hz == 0 || d > calibrationAgree || d < -calibrationAgree {
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
		return Frequency{}, fmt.Errorf("calibrating the TSC against %s: no agreement within %g", clock, calibrationMaxError)
	}
	return Frequency{Hz: uint64(bestHz + 0.5), Source: source}, nil
}
