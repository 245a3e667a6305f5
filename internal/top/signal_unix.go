//go:build unix

package top

import "syscall"

// signals are what k sends, by their names on this system.
var signals = []sigName{
	{"HUP", int(syscall.SIGHUP)}, {"INT", int(syscall.SIGINT)}, {"QUIT", int(syscall.SIGQUIT)},
	{"KILL", int(syscall.SIGKILL)}, {"USR1", int(syscall.SIGUSR1)}, {"USR2", int(syscall.SIGUSR2)},
	{"TERM", int(syscall.SIGTERM)}, {"CONT", int(syscall.SIGCONT)}, {"STOP", int(syscall.SIGSTOP)},
}

// sendSignal sends sig to process pid (kill(2)).
func sendSignal(pid int, sig sigName) error { return syscall.Kill(pid, syscall.Signal(sig.num)) }
