//go:build !linux

package cli

import (
	"os"
	"syscall"
)

// adoptOrphans: only Linux has child subreapers. (On Windows CMD's job
// object holds its whole tree, orphans included.)
func adoptOrphans() (bool, func()) { return false, func() {} }

func reapOrphans(int, *orphans) {}

func childCount() int { return 0 }

// terminalSent: outside Linux run passes on SIGTERM and SIGHUP only.
func terminalSent(int) bool { return true }

// signalName: outside Linux no signal ends a process; its description.
func signalName(s syscall.Signal) string { return s.String() }

// sigChild: never asked for (adoptOrphans is false).
var sigChild os.Signal
