//go:build !windows

package win32_test

// vectorsUnderWine reports whether this process runs under Wine: never,
// off Windows.
func vectorsUnderWine() bool { return false }
