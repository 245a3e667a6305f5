package engine

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// One-shot ProcessTimes and ThreadTimes by pidfd, for a task asked about
// again: most callers poll the same tasks (a first read takes the stat
// path). The stat line a one-shot otherwise reads for the start time (and
// opens by path: together about half its cost) is read once per task, and
// remembered under the task's pidfs inode number, which the kernel never
// gives to another task while it runs (Linux 6.9, 64-bit). A later read
// of a process opens a pidfd, takes its inode number, and finds the start
// there:
//
//	pidfd_open, fstat, CPUCLOCK_SCHED [, VIRT, PROF], poll, close
//
// The poll comes last: a process that has not exited by then was the id's
// all along, so the clocks read by id were its own. VIRT and PROF, the
// split's evidence, are read only when the exact total has moved since they
// were remembered: they move only while the process runs, so an unchanged
// total proves them unchanged, and the answer is exactly what a fresh read
// of all three clocks gives. A thread is read the same way through a
// thread pidfd; another process's thread through its schedstat file, and
// its stat file (its tick counts) only when the run time moved.

// identity is what a one-shot remembers of a task: its start and kind,
// which never change, and its last tick evidence with the exact total it
// was read at.
type identity struct {
	start               uint64
	kthread             bool
	own                 bool // a thread of this process (its clocks are readable)
	rtime, utime, stime uint64
}

// An Engine's asked holds the ids of processes and threads read once by
// the stat path: the pidfd path, whose first read of a task costs more
// than the stat path (it reads stat as well), is taken from the second
// read of an id on, so that a single pass over many tasks pays nothing for
// it.

// taskKey is a process id or a thread id, apart: a process's id is also
// its main thread's.
type taskKey struct {
	id     int
	thread bool
}

// askedBefore reports whether the task was asked about before, and notes it.
func (a *askedSet) askedBefore(k taskKey) bool {
	a.Lock()
	defer a.Unlock()
	if _, ok := a.m[k]; ok {
		return true
	}
	if a.m == nil {
		a.m = make(map[taskKey]struct{})
	}
	dropHalfWhenFull(a.m)
	a.m[k] = struct{}{}
	return false
}

// dropHalfWhenFull drops half of m, chosen at random (Go's map order), once
// it holds maxIdentities entries: a caller polling fewer tasks than that
// keeps most of them.
func dropHalfWhenFull[K comparable, V any](m map[K]V) {
	if len(m) < maxIdentities {
		return
	}
	n := 0
	for k := range m {
		if n++; n > maxIdentities/2 {
			return
		}
		delete(m, k)
	}
}

// An Engine's identities map pidfs inode numbers to what was learned of
// their task. A process's pidfd and its main thread's have the same inode
// number (one struct pid), but not the same run time: the two are kept
// apart (identityKey.thread). Entries of tasks that have gone are never
// wrong, only unused; the map drops half when full (dropHalfWhenFull).

type identityKey struct {
	ino    uint64
	thread bool
}

const maxIdentities = 16384 // about 1.5 MB when full

func (c *identityCache) lookup(k identityKey) (identity, bool) {
	c.Lock()
	defer c.Unlock()
	id, ok := c.m[k]
	return id, ok
}

func (c *identityCache) store(k identityKey, id identity) {
	c.Lock()
	defer c.Unlock()
	if c.m == nil {
		c.m = make(map[identityKey]identity)
	}
	dropHalfWhenFull(c.m)
	c.m[k] = id
}

// openIdentity opens a pidfd for the process id, or with thread for the
// thread id, and returns it with its identity. ok is false where the pidfd
// path cannot answer (no pidfs, not asked before, no pidfd of the kind);
// with ok and an error, the task does not exist.
func (eng *Engine) openIdentity(id int, thread bool) (fd int, k identityKey, ok bool, err error) {
	if !eng.PidfdIdentities() || !eng.asked.askedBefore(taskKey{id, thread}) {
		return -1, k, false, nil
	}
	fd, ino, err := pidfdIdentity(id, thread)
	switch {
	case err == unix.ESRCH:
		return -1, k, true, sysError(fmt.Errorf("pidfd_open: %w", err))
	case err != nil:
		// EINVAL: for a process, the id of a thread that does not lead its
		// group (the stat path says so, from the clock); for a thread, no
		// PIDFD_THREAD. ENOSYS, EPERM (seccomp), EMFILE, no inode: the
		// stat path.
		return -1, k, false, nil
	}
	return fd, identityKey{ino: ino, thread: thread}, true, nil
}

// pidfdIdentity opens a pidfd for the process id, or with thread for the
// thread id, and returns it with its pidfs inode number, which names its
// task for as long as the kernel runs.
func pidfdIdentity(id int, thread bool) (fd int, ino uint64, err error) {
	fd, err = kernel.OpenPidfd(id, thread)
	if err != nil {
		return -1, 0, err
	}
	if ino, err = kernel.PidfdInode(fd); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, ino, nil
}

// SameTask checks, with no descriptor kept for the task, that id (a
// thread's with thread set) still names the task whose pidfs inode number
// is *ino, learning it where *ino is 0: it opens a pidfd, compares and
// closes it. A task holds its id from its birth to its reaping, and never
// gets it back: if the id still names the task learned before some reads
// by name, they were that task's. It returns false where the id names no
// task or another one; true also where pidfds cannot tell (not in use, no
// pidfs, no PIDFD_THREAD, a seccomp filter, no descriptor left), where the
// caller's own checks (a start time) must do.
func (eng *Engine) SameTask(id int, thread bool, ino *uint64) bool {
	if !eng.pidfd || !kernel.PidfsIdentities() {
		return true
	}
	fd, got, err := pidfdIdentity(id, thread)
	switch {
	case err == unix.ESRCH:
		return false
	case err != nil:
		return true
	}
	unix.Close(fd)
	switch {
	case *ino == 0:
		*ino = got
	case *ino != got:
		return false
	}
	return true
}

// oneShotProcessPidfd is the pidfd path. ok is false where it cannot
// answer as a handle would (the same conditions as processCycleNanos, and
// pidfs), and the caller takes the stat path. A process found exited takes
// the handle path (errFoundExited), as on the stat path.
func (eng *Engine) oneShotProcessPidfd(pid int) (t Times, ok bool, err error) {
	fd, key, ok, err := eng.openIdentity(pid, false)
	if !ok || err != nil {
		return Times{}, ok, err
	}
	defer unix.Close(fd)
	id, known := eng.identities.lookup(key)
	base := processClock(pid, 0)
	rtime, e := readClock(base | cpuclockSched)
	if e != 0 {
		// Gone between the open and the read, or refused: the stat path
		// says which, with its own errors.
		return Times{}, false, nil
	}
	s, ok := clockSample(base, rtime, id, known)
	if !ok {
		return Times{}, false, nil
	}
	if !known {
		var pathBuf [64]byte
		stat, ok := readStatOnce(eng.procPath(pathBuf[:0], pid, "stat"), pid)
		if !ok {
			return Times{}, false, nil
		}
		id = identity{start: stat.StartTime, kthread: stat.Flags&pfKthread != 0}
	}
	return eng.answerIdentity(fd, key, id, s, true)
}

// clockSample completes the exact total rtime, read from the clocks at
// base, with the tick samples: the identity's where the total has not moved
// since they were read (they move only while the task runs), else read
// now. ok is false if they cannot be read.
func clockSample(base int32, rtime uint64, id identity, known bool) (cpuSample, bool) {
	s := cpuSample{RTime: rtime}
	if known && rtime == id.rtime {
		s.UTime, s.STime = id.utime, id.stime
		return s, true
	}
	var e unix.Errno
	s.UTime, s.STime, e = kernel.ReadTicks(base)
	return s, e == 0
}

// answerIdentity ends a pidfd one-shot: the poll, last, proves that the
// task had not exited, so that what was read by id was its own; then what
// was learned is remembered under its identity and s is its answer. A task
// found exited (or gone) takes the stat path, and from there the handle
// path, which dates the exit.
func (eng *Engine) answerIdentity(fd int, key identityKey, id identity, s cpuSample, process bool) (Times, bool, error) {
	if state, err := kernel.PidfdState(fd); err != nil || state != kernel.TaskRunning {
		return Times{}, false, nil
	}
	id.rtime, id.utime, id.stime = s.RTime, s.UTime, s.STime
	eng.identities.store(key, id)
	task := task{start: id.start, process: process, kthread: id.kthread, clocks: eng.clocks}
	t, err := task.result(s)
	return t, true, err
}

// oneShotThreadPidfd is the pidfd path of ThreadTimes (Linux 6.9: thread
// pidfds), as oneShotProcessPidfd is ProcessTimes'. A thread of this
// process reads its own CPU clocks; another process's thread, its
// schedstat file (opened after the pidfd, so the poll at the end proves
// the file was the thread's), and its stat file only when the run time
// moved since its tick counts were read.
func (eng *Engine) oneShotThreadPidfd(tid int) (t Times, ok bool, err error) {
	fd, key, ok, err := eng.openIdentity(tid, true)
	if !ok || err != nil {
		return Times{}, ok, err
	}
	defer unix.Close(fd)
	id, known := eng.identities.lookup(key)
	var pathBuf [96]byte
	dir := strconv.AppendInt(eng.procPath(pathBuf[:0], tid, "task/"), int64(tid), 10)
	base := threadClock(tid, 0)
	var s cpuSample
	var rtime uint64
	var e unix.Errno
	own := known && id.own
	if !known || own {
		// The kernel reads only the caller's own threads' clocks: the
		// first read learns which this is.
		rtime, e = readClock(base | cpuclockSched)
		if known && e != 0 {
			return Times{}, false, nil // gone: the stat path says so
		}
		own = e == 0
	}
	switch {
	case own:
		if s, ok = clockSample(base, rtime, id, known); !ok {
			return Times{}, false, nil
		}
	case !eng.schedstat():
		return Times{}, false, nil
	default:
		if s.RTime, err = readRunTime(append(dir, "/schedstat"...)); err != nil {
			return Times{}, false, nil
		}
		if known && s.RTime == id.rtime {
			s.UTime, s.STime = id.utime, id.stime
		}
	}
	// Another process's thread's tick counts come from its stat file, read
	// when they may have moved; every thread's start, on its first read.
	if !known || (!own && s.RTime != id.rtime) {
		stat, ok := readStatOnce(append(dir, "/stat"...), tid)
		if !ok {
			return Times{}, false, nil
		}
		if !known {
			id = identity{start: stat.StartTime, kthread: stat.Flags&pfKthread != 0, own: own}
		}
		if !own {
			s.UTime, s.STime = stat.UTime, stat.STime
		}
	}
	return eng.answerIdentity(fd, key, id, s, false)
}

// readStatOnce opens, reads and closes the stat file at path, and checks
// that it names task id; ok is false on any failure (the caller takes the
// stat path, which reports it).
func readStatOnce(path []byte, id int) (procfs.Stat, bool) {
	fd, err := openAt(path)
	if err != nil {
		return procfs.Stat{}, false
	}
	defer unix.Close(fd)
	var buf [2048]byte
	st, err := preadStat(fd, buf[:])
	if err != nil || st.PID != id {
		return procfs.Stat{}, false
	}
	st.Comm = nil // aliased buf
	return st, true
}
