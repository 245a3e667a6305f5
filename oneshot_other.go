//go:build !linux

package cputime

func oneShotProcessTimes(pid int) (Times, error) { return openedProcessTimes(pid) }
func oneShotThreadTimes(tid int) (Times, error)  { return openedThreadTimes(tid) }
