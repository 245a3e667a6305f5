package freq

import "testing"

// The QPC calibration, which runs only where CPUID states no frequency,
// agrees with CPUID where it does, and with itself.
func TestCalibrateTSCAgainstQPC(t *testing.T) {
	f, err := calibrateTSC()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("calibrated: %v", f)
	if f.Source != SourceCalibratedQPC || f.Hz < 1e8 || f.Hz > 1e10 {
		t.Fatalf("calibration gave %v", f)
	}
	again, err := calibrateTSC()
	if err != nil {
		t.Fatal(err)
	}
	if d := float64(again.Hz)/float64(f.Hz) - 1; d > 1e-4 || d < -1e-4 {
		t.Errorf("two calibrations: %v and %v", f, again)
	}
	if stated, ok := statedTSCFrequency(); ok {
		if d := float64(stated.Hz)/float64(f.Hz) - 1; d > 1e-3 || d < -1e-3 {
			t.Errorf("calibrated %v, stated %v", f, stated)
		}
	}
}
