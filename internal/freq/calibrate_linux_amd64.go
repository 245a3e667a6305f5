package freq

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// calibrateTSC calibrates the TSC against CLOCK_MONOTONIC_RAW (see
// calibrateAgainst). A bracket is a few hundred nanoseconds wide (a system
// call; more under a hypervisor), and the narrowest of several is kept, so
// a 40 ms interval bounds the error to about 1e-5.
func calibrateTSC() (Frequency, error) {
	return calibrateAgainst("CLOCK_MONOTONIC_RAW", 1e9, sampleTSC, SourceCalibrated)
}

const bracketTries = 7

// sampleTSC reads the TSC at the midpoint of a CLOCK_MONOTONIC_RAW read,
// the narrowest bracket of several.
func sampleTSC() (tscPoint, error) {
	best := tscPoint{width: ^uint64(0)}
	for range bracketTries {
		t0 := rdtsc()
		var ts unix.Timespec
		e := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts)
		t1 := rdtsc()
		if e != nil {
			return tscPoint{}, fmt.Errorf("reading CLOCK_MONOTONIC_RAW: %w", e)
		}
		ns := uint64(ts.Nano())
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
