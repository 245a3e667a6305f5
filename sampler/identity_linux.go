package sampler

import (
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

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
	if !usePidfd || !kernel.PidfsIdentities() {
		return readOK
	}
	fd, err := kernel.OpenPidfd(id, thread)
	switch {
	case err == unix.ESRCH:
		return readGone
	case err != nil:
		return readOK
	}
	got, err := kernel.PidfdInode(fd)
	unix.Close(fd)
	switch {
	case err != nil:
	case *ino == 0:
		*ino = got
	case *ino != got:
		return readGone
	}
	return readOK
}
