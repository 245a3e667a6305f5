package engine

import (
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// Test hooks: knobs and views for the tests of package cputime and the
// engine's users, which cannot reach the engine's unexported state. Nothing
// outside tests calls them.

// SetUsePidfd makes handles opened from now on use pidfds or not, so tests
// can exercise the fallback of kernels without them; it returns the undo.
func SetUsePidfd(v bool) (restore func()) {
	old := usePidfd
	usePidfd = v
	return func() { usePidfd = old }
}

// SetProcRoot makes the package read the proc file system at root (a
// fixture tree) instead of /proc; it returns the undo.
func SetProcRoot(root string) (restore func()) {
	old := procFS
	procFS = procfs.NewFS(root)
	return func() { procFS = old }
}

// WatchedCount is how many handles the exit watcher (by pidfd) and the
// exit poller watch.
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

// OneShotProcessBoth reads process pid by both one-shot paths: by pidfd
// (ok false where that path does not answer) and by its stat file.
func OneShotProcessBoth(pid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	viaPidfd, ok, err = oneShotProcessPidfd(pid)
	if err != nil {
		return
	}
	viaStat, err = oneShotProcess(pid)
	return
}

// PidfdIdentities says whether the pidfd one-shot path is available.
func PidfdIdentities() bool { return kernel.PidfsIdentities() && clockIsProc() }

// ForgetIdentities empties the pidfd one-shot's memory of processes, so a
// benchmark can measure a first read.
func ForgetIdentities() {
	identities.Lock()
	identities.m = nil
	identities.Unlock()
	asked.Lock()
	asked.m = nil
	asked.Unlock()
}

// SetUseProbe makes handles opened from now on use exit probes or poll
// their pidfds; it returns the undo.
func SetUseProbe(v bool) (restore func()) {
	old := useProbe
	useProbe = v
	return func() { useProbe = old }
}

// OneShotThreadBoth reads thread tid by both one-shot paths: by pidfd (ok
// false where that path does not answer) and by its stat file.
func OneShotThreadBoth(tid int) (viaPidfd Times, ok bool, viaStat Times, err error) {
	viaPidfd, ok, err = oneShotThreadPidfd(tid)
	if err != nil {
		return
	}
	viaStat, err = oneShotThread(tid)
	return
}
