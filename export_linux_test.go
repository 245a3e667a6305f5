package cputime

// SetUsePidfd makes handles opened from now on use pidfds or not, so tests
// can exercise the fallback of kernels without them; it returns the undo.
func SetUsePidfd(v bool) (restore func()) {
	old := usePidfd
	usePidfd = v
	return func() { usePidfd = old }
}
