//go:build !linux

package cli

import "syscall"

// signalName: outside Linux no signal ends a process; its description.
func signalName(s syscall.Signal) string { return s.String() }
