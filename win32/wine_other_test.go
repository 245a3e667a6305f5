//go:build !windows

package win32_test

// runningOnWine is false: Wine runs only Windows binaries.
func runningOnWine() bool { return false }
