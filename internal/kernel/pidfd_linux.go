package kernel

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

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

// PidfdThread is PIDFD_THREAD (include/uapi/linux/pidfd.h, Linux 6.9): a
// pidfd for one thread rather than its whole process. It is O_EXCL.
const PidfdThread = unix.O_EXCL

// OpenPidfd opens a non-blocking pidfd for the process id, or with thread
// set for the thread id, retrying on EINTR. The error is the kernel's errno:
// ESRCH for no such task; EINVAL for a thread before Linux 6.9 or for a
// process id that names a thread not leading its group; ENOSYS before 5.3;
// EPERM under a seccomp filter; EMFILE. pidfd_open always sets O_CLOEXEC.
func OpenPidfd(id int, thread bool) (int, error) {
	flags := unix.PIDFD_NONBLOCK
	if thread {
		flags |= PidfdThread
	}
	for {
		fd, err := unix.PidfdOpen(id, flags)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// pidfsMagic is PIDFS_MAGIC (include/uapi/linux/magic.h): the file system
// of pidfds since Linux 6.9.
const pidfsMagic = 0x50494446

// PidfsIdentities reports, once, whether pidfds identify their task by
// inode number: pidfs gives each task's pid an inode number of its own,
// never given to another, on a 64-bit kernel (a 32-bit one's wrap).
var PidfsIdentities = sync.OnceValue(func() bool {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return false
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == pidfsMagic
})

// PidfdInode returns the inode number of the pidfd fd: its task's identity
// where PidfsIdentities holds.
func PidfdInode(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
