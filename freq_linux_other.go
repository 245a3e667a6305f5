//go:build linux && !amd64 && !arm64

package cputime

import (
	"fmt"
	"runtime"
)

// archFrequency: only amd64 (the TSC) and arm64 (the generic timer) have a
// reference clock cputime knows how to read and trust.
func archFrequency() (CycleFrequency, error) {
	return CycleFrequency{}, fmt.Errorf("cycle times on %s: %w (no reference clock known for this architecture; amd64 and arm64 have one)", runtime.GOARCH, ErrNotSupported)
}
