package cputime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// calibrateTSC calibrates the TSC against CLOCK_MONOTONIC_RAW (see
// calibrateAgainst). A bracket is a few hundred nanoseconds wide (a system
// call; more under a hypervisor), and the narrowest of several is kept, so
// a 40 ms interval bounds the error to about 1e-5.
func calibrateTSC() (CycleFrequency, error) {
	return calibrateAgainst("CLOCK_MONOTONIC_RAW", 1e9, sampleTSC, SourceCalibrated)
}

const bracketTries = 7

// sampleTSC reads the TSC at the midpoint of a CLOCK_MONOTONIC_RAW read,
// the narrowest bracket of several.
func sampleTSC() (tscPoint, error) {
	best := tscPoint{width: ^uint64(0)}
	for range bracketTries {
		t0 := rdtsc()
		ns, e := readClock(unix.CLOCK_MONOTONIC_RAW)
		t1 := rdtsc()
		if e != 0 {
			return tscPoint{}, fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", e)
		}
		if t1 < t0 {
			continue // migrated to a CPU whose TSC is behind: try again
		}
		if w := t1 - t0; w < best.width {
			best = tscPoint{tsc: t0 + w/2, ref: ns, width: w}
		}
	}
	if best.width == ^uint64(0) {
		return tscPoint{}, fmt.Errorf("the TSC went backwards in every read: %w", ErrNotSupported)
	}
	return best, nil
}
