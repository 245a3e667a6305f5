package recorder

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waiter waits until one of a set of descriptors is readable (a ring
// buffer past its watermark, the wake eventfd) or a timeout passes. It
// parks the goroutine in the Go runtime's poller on an epoll instance of
// its own rather than block its thread in poll(2): a thread blocked in a
// system call holds its P, which the runtime's sysmon then takes back
// each time, and so sysmon, which sleeps for good while every P is idle,
// keeps waking on 20-µs naps, a share of the recording's own CPU
// (docs/figures.md). Where the epoll instance cannot be made, it blocks
// in poll(2).
type waiter struct {
	fds    []unix.PollFd // the poll(2) fallback's set, if no epoll
	epfd   int
	file   *os.File // epfd, registered with the runtime poller
	rc     syscall.RawConn
	events []unix.EpollEvent
}

func newWaiter(fds []int) *waiter {
	w := &waiter{epfd: -1}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err == nil {
		for _, fd := range fds {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
			if err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
				break
			}
		}
		if err == nil {
			err = unix.SetNonblock(epfd, true)
		}
		if err == nil {
			w.file = os.NewFile(uintptr(epfd), "recorder epoll")
			if w.rc, err = w.file.SyscallConn(); err == nil {
				w.epfd, w.events = epfd, make([]unix.EpollEvent, max(len(fds), 1)) // none: a wait that only times out
				return w
			}
			w.file.Close()
			w.file = nil
		} else {
			unix.Close(epfd)
		}
	}
	for _, fd := range fds {
		w.fds = append(w.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	return w
}

// wait returns once a descriptor is readable or d has passed.
func (w *waiter) wait(d time.Duration) {
	if w.file == nil {
		unix.Poll(w.fds, int(d/time.Millisecond))
		return
	}
	w.file.SetReadDeadline(time.Now().Add(d))
	w.rc.Read(func(uintptr) bool {
		// Raw, as the drains' calls: with a zero timeout it never
		// blocks, and entered through the scheduler it would wake sysmon.
		// epoll_pwait with no signal mask: arm64 has no epoll_wait.
		n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(w.epfd), uintptr(unsafe.Pointer(&w.events[0])), uintptr(len(w.events)), 0, 0, 0)
		return n > 0 || errno != 0 && errno != unix.EINTR
	})
}

func (w *waiter) close() {
	if w.file != nil {
		w.file.Close()
	}
}
