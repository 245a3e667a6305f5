package freq

import "fmt"

// reference returns the generic timer's frequency. The firmware
// programs CNTFRQ_EL0 and the kernel's arch timer uses the same figure
// unless the device tree overrides it, which only broken firmware needs.
func reference() (Frequency, error) {
	hz := cntfrq()
	if hz == 0 {
		return Frequency{}, fmt.Errorf("CNTFRQ_EL0 is 0 (firmware did not set the generic timer's frequency): %w", ErrNotSupported)
	}
	return Frequency{Hz: hz, Source: SourceCNTFRQ}, nil
}
