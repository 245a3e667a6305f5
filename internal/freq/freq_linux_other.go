//go:build linux && !amd64 && !arm64

package freq

import (
	"fmt"
	"runtime"
)

// reference: only amd64 (the TSC) and arm64 (the generic timer) have a
// reference clock cputime knows how to read and trust.
func reference() (Frequency, error) {
	return Frequency{}, fmt.Errorf("cycle times on %s: %w (no reference clock known for this architecture; amd64 and arm64 have one)", runtime.GOARCH, ErrNotSupported)
}
