package cli

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is the signal's name, "SIGSEGV".
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
