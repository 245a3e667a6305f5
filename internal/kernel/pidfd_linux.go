package kernel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// TaskState is what a pidfd says of its task.
type TaskState uint8

const (
	TaskRunning TaskState = iota // running (or stopped): reads by id are its own
	TaskExited                   // exited, not yet reaped: its accounting is final and still readable
	TaskGone                     // reaped: its id may already name another task
)

// PidfdState polls the pidfd without blocking. POLLIN means the task (for a
// process pidfd, the whole thread group) has exited; since Linux 6.9 POLLHUP
// adds that it has been reaped. Before 6.9 a signal 0 tells the two apart:
// it fails with ESRCH only once the task is gone.
func PidfdState(fd int) (TaskState, error) {
	for {
		pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		n, e := pollNow(&pfd)
		switch {
		case e == unix.EINTR:
			continue
		case e != 0:
			return 0, fmt.Errorf("polling pidfd: %w", e)
		case n == 0:
			return TaskRunning, nil
		case pfd.Revents&unix.POLLNVAL != 0:
			return 0, fmt.Errorf("polling pidfd: %w", unix.EBADF)
		case pfd.Revents&unix.POLLHUP != 0:
			return TaskGone, nil
		}
		if err := unix.PidfdSendSignal(fd, 0, nil, 0); errors.Is(err, unix.ESRCH) {
			return TaskGone, nil
		}
		return TaskExited, nil
	}
}
