//go:build !linux && !windows

package freq

import (
	"fmt"
	"runtime"
)

// reference: cycle times are not implemented on this system.
func reference() (Frequency, error) {
	return Frequency{}, fmt.Errorf("cycle times on %s: %w", runtime.GOOS, ErrNotSupported)
}
