package cputime

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// A one-shot ProcessTimes by pidfd, for a process asked about again: most
// callers poll the same processes (a first read takes the stat path). The stat line a one-shot otherwise reads
// for the start time (and opens by path: together about half its cost) is
// read once per process, and remembered under the process's pidfs inode
// number, which the kernel never gives to another process while it runs
// (Linux 6.9, 64-bit). A later read opens a pidfd, takes its inode number,
// and finds the start there:
//
//	pidfd_open, fstat, CPUCLOCK_SCHED [, VIRT, PROF], poll, close
//
// The poll comes last: a process that has not exited by then was the id's
// all along, so the clocks read by id were its own. VIRT and PROF, the
// split's evidence, are read only when the exact total has moved since they
// were remembered: they move only while the process runs, so an unchanged
// total proves them unchanged, and the answer is exactly what a fresh read
// of all three clocks gives.

// pidfsMagic is PIDFS_MAGIC (include/uapi/linux/magic.h): the file system
// of pidfds since Linux 6.9, where each process's pidfd has an inode number
// of its own.
const pidfsMagic = 0x50494446

// pidfdIdentities is whether pidfds have inode numbers that identify their
// process: pidfs, on a 64-bit kernel (a 32-bit one's inode numbers wrap).
var pidfdIdentities = sync.OnceValue(func() bool {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return false
	}
	fd, err := unix.PidfdOpen(getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == pidfsMagic
})

// identity is what a one-shot remembers of a process: its start and kind,
// which never change, and its last tick evidence with the exact total it
// was read at.
type identity struct {
	start               uint64
	kthread             bool
	rtime, utime, stime uint64
}

// asked holds the ids of processes read once by the stat path: the pidfd
// path, whose first read of a process costs more than the stat path (it
// reads stat as well), is taken from the second read of an id on, so that
// a single pass over many processes pays nothing for it.
var asked struct {
	sync.Mutex
	m map[int]struct{}
}

// askedBefore reports whether pid was asked about before, and notes it.
func askedBefore(pid int) bool {
	asked.Lock()
	defer asked.Unlock()
	if _, ok := asked.m[pid]; ok {
		return true
	}
	if asked.m == nil || len(asked.m) >= maxIdentities {
		asked.m = make(map[int]struct{})
	}
	asked.m[pid] = struct{}{}
	return false
}

// identities maps pidfs inode numbers to what was learned of their
// process. Entries of processes that have gone are never wrong, only
// unused; the map is emptied when it reaches maxIdentities.
var identities struct {
	sync.Mutex
	m map[uint64]identity
}

const maxIdentities = 4096

func lookupIdentity(ino uint64) (identity, bool) {
	identities.Lock()
	defer identities.Unlock()
	id, ok := identities.m[ino]
	return id, ok
}

func storeIdentity(ino uint64, id identity) {
	identities.Lock()
	defer identities.Unlock()
	if identities.m == nil || len(identities.m) >= maxIdentities {
		identities.m = make(map[uint64]identity)
	}
	identities.m[ino] = id
}

// oneShotProcessPidfd is the pidfd path. ok is false where it cannot
// answer as a handle would (the same conditions as processCycleNanos, and
// pidfs), and the caller takes the stat path. A process found exited takes
// the handle path (errFoundExited), as on the stat path.
func oneShotProcessPidfd(pid int) (t Times, ok bool, err error) {
	if !usePidfd || procFS.Root() != "/proc" || !clockIsProc() || !pidfdIdentities() || !askedBefore(pid) {
		return Times{}, false, nil
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	for err == unix.EINTR {
		fd, err = unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	}
	switch err {
	case nil:
	case unix.ESRCH:
		return Times{}, true, sysError(fmt.Errorf("pidfd_open: %w", err))
	case unix.EINVAL:
		// The id of a thread that does not lead its group (the stat path
		// gives the same answer, from the clock), or no pidfd for it.
		return Times{}, false, nil
	default:
		return Times{}, false, nil // ENOSYS, EPERM (seccomp), EMFILE: the stat path
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Times{}, false, nil
	}
	id, known := lookupIdentity(st.Ino)
	base := processClock(pid, 0)
	rtime, e := readClock(base | cpuclockSched)
	if e != 0 {
		// Gone between the open and the read, or refused: the stat path
		// says which, with its own errors.
		return Times{}, false, nil
	}
	s := cpuSample{RTime: rtime}
	if known && rtime == id.rtime {
		s.UTime, s.STime = id.utime, id.stime
	} else {
		if s.UTime, s.STime, e = kernel.ReadTicks(base); e != 0 {
			return Times{}, false, nil
		}
	}
	if !known {
		var pathBuf [64]byte
		sfd, err := openAt(procPath(pathBuf[:0], pid, "stat"))
		if err != nil {
			return Times{}, false, nil
		}
		var buf [2048]byte
		stat, err := preadStat(sfd, buf[:])
		unix.Close(sfd)
		if err != nil || stat.PID != pid {
			return Times{}, false, nil
		}
		id = identity{start: stat.StartTime, kthread: stat.Flags&pfKthread != 0}
	}
	state, err := pidfdState(fd)
	if err != nil || state != taskRunning {
		// Exited (or gone) before the poll: the clocks may be final or
		// another's; the stat path and then the handle path date the exit.
		return Times{}, false, nil
	}
	id.rtime, id.utime, id.stime = s.RTime, s.UTime, s.STime
	storeIdentity(st.Ino, id)
	task := task{start: id.start, process: true, kthread: id.kthread}
	t, err = task.result(s)
	return t, true, err
}
