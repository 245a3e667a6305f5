//go:build windows && !amd64

package freq

import (
	"fmt"
	"runtime"
)

// reference: on Windows only amd64 is known to count cycles in ticks
// of a clock whose rate cputime can find (the TSC). The cycle times
// themselves are still the native ones.
func reference() (Frequency, error) {
	return Frequency{}, fmt.Errorf("the rate of cycle times on windows/%s: %w (the counter Windows uses on this architecture is not documented)", runtime.GOARCH, ErrNotSupported)
}
