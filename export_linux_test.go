package cputime

import "github.com/cputime/cputime/internal/engine"

// The engine's test hooks (internal/engine/testhooks_linux.go), for this
// package's external tests.
var (
	SetUsePidfd      = engine.SetUsePidfd
	SetProcRoot      = engine.SetProcRoot
	WatchedCount     = engine.WatchedCount
	PollerRunning    = engine.PollerRunning
	PidfdIdentities  = engine.PidfdIdentities
	ForgetIdentities = engine.ForgetIdentities
	SetUseProbe      = engine.SetUseProbe
)

// OneShotProcessBoth reads process pid by both one-shot paths: by pidfd (ok
// false where that path does not answer) and by its stat file.
func OneShotProcessBoth(pid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	p, ok, s, err := engine.OneShotProcessBoth(pid)
	viaPidfd, _ = fromEngine(p, nil)
	viaStat, _ = fromEngine(s, nil)
	return viaPidfd, ok, viaStat, err
}

// OneShotThreadBoth is OneShotProcessBoth for thread tid.
func OneShotThreadBoth(tid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	p, ok, s, err := engine.OneShotThreadBoth(tid)
	viaPidfd, _ = fromEngine(p, nil)
	viaStat, _ = fromEngine(s, nil)
	return viaPidfd, ok, viaStat, err
}
