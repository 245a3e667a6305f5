//go:build !linux && !windows

package cli

import "io"

// isTerminal: no progress bar where the terminal cannot be told.
func isTerminal(io.Writer) bool { return false }
