package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// An exit probe is an epoll instance that holds one pidfd, so that asking
// whether the pidfd's task has exited costs an epoll_wait that finds its
// ready list empty instead of a poll, which sets up a poll table and calls
// the pidfd's poll method, and costs less (the root package's Floor/probe
// and Floor/poll benchmarks; docs/figures.md). It is
// the check a handle makes after each read of its task's clock by id.
//
// It answers as the poll would. The kernel wakes the pidfd's waiters, and
// so puts it on the probe's ready list, when the task exits
// (do_notify_pidfd, from exit_notify), before its parent can reap it, and
// a task's id is free for another only once it is reaped. So an empty
// ready list proves that the task had not been reaped when it was
// checked, and a clock read by id before that was the task's own. A
// pidfd on the ready list is polled again by epoll_wait itself
// (level-triggered), so a wakeup that is not its task's exit (a thread of
// the process ending) is not reported. When the probe reports the pidfd
// ready, PidfdState tells exited from gone.

// OpenExitProbe returns an exit probe for pidfd, or -1 and an error (no
// descriptor left: the caller polls the pidfd instead).
func OpenExitProbe(pidfd int) (int, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pidfd)}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, pidfd, &ev); err != nil {
		unix.Close(ep)
		return -1, err
	}
	return ep, nil
}

// ProbeExited reports whether the probe's task may have exited: false
// means it had not when the probe was asked; true, that PidfdState must
// say.
func ProbeExited(probe int) bool {
	var ev unix.EpollEvent
	for {
		// epoll_pwait with no signal mask is epoll_wait, and exists on
		// every architecture.
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(probe), uintptr(unsafe.Pointer(&ev)), 1, 0, 0, 0)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return true // let the poll answer, or fail
		}
		return n != 0
	}
}
