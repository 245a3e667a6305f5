package freq

import "testing"

// BenchmarkCalibrateTSC is the wall time of one calibration of the TSC
// against CLOCK_MONOTONIC_RAW: what the first ReferenceFrequency call costs
// on a machine that does not state its TSC frequency (the docs say about
// 40 ms, at most about 100 ms).
func BenchmarkCalibrateTSC(b *testing.B) {
	for b.Loop() {
		if _, err := calibrateTSC(); err != nil {
			b.Skip(err)
		}
	}
}
