package engine

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// A pidfd (Linux 5.3) refers to one task, not to its id: it tells whether
// that task is running, has exited but not yet been reaped, or is gone, and
// a reused id never answers through it. With PIDFD_THREAD (Linux 6.9) it
// refers to one thread rather than to a whole process. Handles hold one to
// know that the CPU clock they read by id was their own task's, to learn the
// moment the task exits, and to wait for it.

// openPidfd is the package's openPidfd where the Engine uses pidfds; else
// -1, as on a kernel without them.
func (eng *Engine) openPidfd(id int, thread bool) (int, error) {
	if !eng.pidfd {
		return -1, nil
	}
	return openPidfd(id, thread)
}

// openPidfd opens a non-blocking pidfd for the process pid, or with thread
// set for the thread tid. It returns -1 and no error where the kernel has
// no pidfds of that kind (ENOSYS before 5.3, EINVAL for a thread before
// 6.9, or a seccomp filter that forbids them).
func openPidfd(id int, thread bool) (int, error) {
	fd, err := kernel.OpenPidfd(id, thread)
	switch err {
	case nil:
		return fd, nil
	case unix.ENOSYS, unix.EPERM, unix.EINVAL:
		// EINVAL: no PIDFD_THREAD, or (for a process) id is not a
		// thread-group leader; the /proc reads that follow tell which.
		return -1, nil
	}
	return -1, fmt.Errorf("pidfd_open: %w", sysError(err))
}

// exitObserver is what the exit watcher and the exit poller hold of a
// handle: its system part (processSys, threadSys), allocated apart from the
// exported handle, so that neither keeps the handle reachable and a handle
// dropped without Close can be collected (its cleanup then unwatches it).
type exitObserver interface {
	// base is the handle's common part.
	base() *handleSys
	// exited is called once, from the watcher's or poller's goroutine,
	// when the task has exited; at says when and how that was learned. It
	// must not block.
	exited(at exitAt)
}

// exitWatcher is the process's one watcher of the pidfds of open handles:
// it calls the handle's exited with the time it woke.
var exitWatcher = sync.OnceValues(func() (*kernel.ExitWatcher, error) {
	return kernel.NewExitWatcher("cputime-exit-watcher")
})
