package kernel

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ExitWatcher learns the moment tasks exit: one goroutine waits, through
// the Go runtime's poller, on a private epoll instance holding the pidfd of
// every watched task, and calls the function given for it with the time it
// woke. One goroutine and one epoll registration per pidfd, however many;
// nothing runs while no task exits.
type ExitWatcher struct {
	mu    sync.Mutex
	epfd  int
	file  *os.File // epfd, registered with the runtime poller
	calls map[int32]func(time.Time)
	done  chan struct{}
}

// NewExitWatcher starts a watcher; name labels its epoll descriptor.
func NewExitWatcher(name string) (*ExitWatcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("setting epoll non-blocking: %w", err)
	}
	w := &ExitWatcher{epfd: epfd, calls: make(map[int32]func(time.Time)), done: make(chan struct{})}
	w.file = os.NewFile(uintptr(epfd), name)
	rc, err := w.file.SyscallConn()
	if err != nil {
		w.file.Close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	go w.run(rc)
	return w, nil
}

// Watch calls exited, once, from the watcher's goroutine, when the task of
// pidfd exits (at once if it has already). Unwatch pidfd before closing it.
func (w *ExitWatcher) Watch(pidfd int, exited func(at time.Time)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(pidfd)}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, pidfd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	w.calls[int32(pidfd)] = exited
	return nil
}

// Unwatch forgets pidfd, if watched; call it before closing the pidfd.
func (w *ExitWatcher) Unwatch(pidfd int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.calls[int32(pidfd)]; ok {
		delete(w.calls, int32(pidfd))
		unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, pidfd, nil)
	}
}

// Watching is how many pidfds the watcher holds.
func (w *ExitWatcher) Watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

// Close stops the watcher and returns once its goroutine has; the
// functions of tasks still watched are never called.
func (w *ExitWatcher) Close() {
	w.file.Close() // wakes run, whose Read fails
	<-w.done
}

func (w *ExitWatcher) run(rc syscall.RawConn) {
	defer close(w.done)
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

func (w *ExitWatcher) fire(pidfd int, at time.Time) {
	w.mu.Lock()
	exited, ok := w.calls[int32(pidfd)]
	if ok {
		// A pidfd closed and its number reused between epoll_wait and
		// here would carry a stale event: believe only the pidfd itself.
		if st, err := PidfdState(pidfd); err != nil || st == TaskRunning {
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
		exited(at)
	}
}
