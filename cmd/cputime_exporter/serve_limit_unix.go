//go:build unix

package main

import "golang.org/x/sys/unix"

// raiseFileLimit returns the open-file limit, the soft one raised to the
// hard one first (as Go's os package does at start on Linux).
func raiseFileLimit() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &raised) == nil {
			lim.Cur = lim.Max
		}
	}
	return int(min(lim.Cur, 1<<30))
}
