package engine

// Views of the engine's state for the tests of package cputime, which
// check it through its API and cannot reach this package's unexported
// state: read-only, and on no query's path.

// WatchedCount is how many handles, of every Engine, the exit watcher (by
// pidfd) and the exit poller watch.
func WatchedCount() int {
	n, _ := poller.watching()
	if w, err := exitWatcher(); err == nil {
		n += w.Watching()
	}
	return n
}

// PollerRunning says whether the exit poller's goroutine runs.
func PollerRunning() bool {
	_, running := poller.watching()
	return running
}

// OneShotProcessBoth reads process pid by both one-shot paths: by pidfd (ok
// false where that path does not answer) and by its stat file.
func (eng *Engine) OneShotProcessBoth(pid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	viaPidfd, ok, err = eng.oneShotProcessPidfd(pid)
	if err != nil {
		return
	}
	viaStat, err = eng.oneShotProcess(pid)
	return
}

// OneShotThreadBoth reads thread tid by both one-shot paths: by pidfd (ok
// false where that path does not answer) and by its stat file.
func (eng *Engine) OneShotThreadBoth(tid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	viaPidfd, ok, err = eng.oneShotThreadPidfd(tid)
	if err != nil {
		return
	}
	viaStat, err = eng.oneShotThread(tid)
	return
}
