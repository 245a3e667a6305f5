package cputime

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// A pidfd (Linux 5.3) refers to one task, not to its id: it tells whether
// that task is running, has exited but not yet been reaped, or is gone, and
// a reused id never answers through it. With PIDFD_THREAD (Linux 6.9) it
// refers to one thread rather than to a whole process. Handles hold one to
// know that the CPU clock they read by id was their own task's, to learn the
// moment the task exits, and to wait for it.

// pidfdThread is PIDFD_THREAD (include/uapi/linux/pidfd.h): O_EXCL.
const pidfdThread = unix.O_EXCL

// usePidfd is whether handles use pidfds; a variable so that tests can
// exercise the fallback of kernels without them.
var usePidfd = true

// openPidfd opens a non-blocking pidfd for the process pid, or with thread
// set for the thread tid. It returns -1 and no error where the kernel has
// no pidfds of that kind (ENOSYS before 5.3, EINVAL for a thread before
// 6.9, or a seccomp filter that forbids them).
func openPidfd(id int, thread bool) (int, error) {
	if !usePidfd {
		return -1, nil
	}
	flags := unix.PIDFD_NONBLOCK
	if thread {
		flags |= pidfdThread
	}
	for {
		fd, err := unix.PidfdOpen(id, flags)
		switch err {
		case nil:
			return fd, nil // pidfd_open always sets O_CLOEXEC
		case unix.EINTR:
			continue
		case unix.ESRCH:
			return -1, fmt.Errorf("pidfd_open: %w", sysError(err))
		case unix.ENOSYS, unix.EPERM, unix.EINVAL:
			// EINVAL: no PIDFD_THREAD, or (for a process) id is not a
			// thread-group leader; the /proc reads that follow tell which.
			return -1, nil
		}
		return -1, fmt.Errorf("pidfd_open: %w", sysError(err))
	}
}

// taskState is what a pidfd says of its task (internal/kernel).
type taskState = kernel.TaskState

const (
	taskRunning = kernel.TaskRunning
	taskExited  = kernel.TaskExited
	taskGone    = kernel.TaskGone
)

// pidfdState polls the pidfd without blocking: kernel.PidfdState.
func pidfdState(fd int) (taskState, error) { return kernel.PidfdState(fd) }

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

// watcher learns the moment tasks exit: one goroutine waits, through the Go
// runtime's poller, on a private epoll instance holding the pidfd of every
// open handle, and calls the handle's exited with the time it woke. One
// goroutine, and one epoll registration per handle, however many handles;
// nothing runs while no task exits.
type watcher struct {
	mu    sync.Mutex
	epfd  int
	epoll *os.File // epfd, registered with the runtime poller; never closed
	calls map[int32]exitObserver
}

var exitWatcher = sync.OnceValues(func() (*watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("setting epoll non-blocking: %w", err)
	}
	w := &watcher{epfd: epfd, calls: make(map[int32]exitObserver)}
	w.epoll = os.NewFile(uintptr(epfd), "cputime-exit-watcher")
	rc, err := w.epoll.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	go w.run(rc)
	return w, nil
})

// watch calls o.exited, once, when the task of pidfd exits (at once if it
// has already).
func (w *watcher) watch(pidfd int, o exitObserver) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(pidfd)}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, pidfd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	w.calls[int32(pidfd)] = o
	return nil
}

// unwatch forgets pidfd; call it before closing the pidfd.
func (w *watcher) unwatch(pidfd int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.calls[int32(pidfd)]; ok {
		delete(w.calls, int32(pidfd))
		unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, pidfd, nil)
	}
}

// watching is how many pidfds the watcher holds.
func (w *watcher) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

func (w *watcher) run(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 64)
	rc.Read(func(uintptr) bool {
		for {
			n, err := unix.EpollWait(w.epfd, events, 0)
			if err == unix.EINTR {
				continue
			}
			if n <= 0 {
				return false // wait for the runtime poller to wake us
			}
			now := time.Now()
			for _, ev := range events[:n] {
				w.fire(int(ev.Fd), now)
			}
			if n < len(events) {
				return false
			}
		}
	})
}

func (w *watcher) fire(pidfd int, at time.Time) {
	w.mu.Lock()
	o, ok := w.calls[int32(pidfd)]
	if ok {
		// A pidfd closed and its number reused between epoll_wait and
		// here would carry a stale event: believe only the pidfd itself.
		if st, err := pidfdState(pidfd); err != nil || st == taskRunning {
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(pidfd)}
			unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, pidfd, &ev) // re-arm
			w.mu.Unlock()
			return
		}
		delete(w.calls, int32(pidfd))
		unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, pidfd, nil)
	}
	w.mu.Unlock()
	if ok {
		o.exited(observedAt(at))
	}
}
