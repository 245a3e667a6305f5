//go:build windows

package top

import "os"

// signals are what k offers on Windows, which has no signals: TERM and
// KILL both end the process (TerminateProcess), as Go's os.Process.Kill
// does.
var signals = []sigName{{"TERM", 15}, {"KILL", 9}}

func sendSignal(pid int, _ sigName) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}
