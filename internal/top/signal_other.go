//go:build !unix && !windows

package top

import "errors"

var signals = []sigName{{"TERM", 15}, {"KILL", 9}}

func sendSignal(int, sigName) error {
	return errors.New("sending signals is not supported on this system")
}
