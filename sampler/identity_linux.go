package sampler

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// pidfsMagic is PIDFS_MAGIC (include/uapi/linux/magic.h): the file system
// of pidfds since Linux 6.9, where each task's pid has an inode number of
// its own, never given to another (64 bits).
const pidfsMagic = 0x50494446

// pidfsIdentities is whether pidfds identify their task by inode number:
// pidfs, on a 64-bit kernel (a 32-bit one's inode numbers wrap).
var pidfsIdentities = sync.OnceValue(func() bool {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return false
	}
	fd, err := unix.PidfdOpen(selfPID, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == pidfsMagic
})

// pidfdThread is PIDFD_THREAD (include/uapi/linux/pidfd.h): O_EXCL.
const pidfdThread = unix.O_EXCL

// identify checks the identity of a task read by name, with no descriptor
// kept for it (over the budget): it opens a pidfd for id (a thread's with
// thread set), compares its pidfs inode with *ino (learning it where *ino
// is 0) and closes it. A task holds its id from its birth to its reaping,
// and never gets it back: if the id still names the task learned before
// some reads by name, they were that task's. readGone where the id names
// no task or another one. readOK also where pidfds cannot tell (no pidfs,
// no PIDFD_THREAD, a seccomp filter, no descriptor left): the start time
// and the counters (sameTask) are the check then.
func identify(id int, thread bool, ino *uint64) readStatus {
	if !usePidfd || !pidfsIdentities() {
		return readOK
	}
	flags := unix.PIDFD_NONBLOCK
	if thread {
		flags |= pidfdThread
	}
	var fd int
	var err error
	for {
		if fd, err = unix.PidfdOpen(id, flags); err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.ESRCH:
		return readGone
	case err != nil:
		return readOK
	}
	var s unix.Stat_t
	err = unix.Fstat(fd, &s)
	unix.Close(fd)
	switch {
	case err != nil:
	case *ino == 0:
		*ino = s.Ino
	case *ino != s.Ino:
		return readGone
	}
	return readOK
}

// pidfd states, read as the root package reads them (internal/kernel).
type taskState = kernel.TaskState

const (
	taskRunning = kernel.TaskRunning
	taskExited  = kernel.TaskExited
	taskGone    = kernel.TaskGone
)

func pidfdState(fd int) (taskState, error) { return kernel.PidfdState(fd) }
