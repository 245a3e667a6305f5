package sampler

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// fileBudget derives the descriptors the sampler may keep from
// RLIMIT_NOFILE, raising the soft limit to the hard one first as Go's os
// package does at init (with prlimit, which leaves the limit os/exec
// restores for children as it was).
func fileBudget(max int) int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		lim.Cur = 1024
	} else if lim.Cur < lim.Max {
		raised := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if unix.Prlimit(0, unix.RLIMIT_NOFILE, &raised, nil) == nil {
			lim.Cur = lim.Max
		}
	}
	limit := int(min(lim.Cur, 1<<30))
	budget := min(limit*3/4, limit-128)
	if max > 0 {
		budget = min(budget, max)
	}
	return budget
}

func (st *state) closeAll() {
	for _, p := range st.procs {
		st.dropProc(p)
	}
	if st.watch != nil {
		st.watch.Close()
		st.watch = nil
	}
	if st.procfd >= 0 {
		unix.Close(st.procfd)
		st.procfd = -1
	}
}

func (st *state) closeFD(fd *int) {
	if *fd >= 0 {
		unix.Close(*fd)
		*fd = -1
		st.files--
	}
}

func (st *state) dropProc(p *proc) {
	for _, t := range p.threads {
		st.dropThread(t)
	}
	p.threads = nil
	if p.pidfd >= 0 && st.watch != nil {
		st.watch.Unwatch(p.pidfd)
	}
	st.closeFD(&p.statfd)
	st.closeFD(&p.pidfd)
	st.closeFD(&p.taskfd)
	delete(st.procs, p.pid)
	st.dirty = true
}

func (st *state) dropThread(t *thread) {
	if t.schedfd < 0 {
		st.degrade--
	}
	st.closeFD(&t.schedfd)
	st.closeFD(&t.statfd)
}

// openAt opens name relative to dirfd within the budget; -1 when over it.
func (st *state) openAt(dirfd int, name []byte, flags int, reserve int) (int, error) {
	if st.files+1+reserve > st.budget {
		return -1, nil
	}
	fd, err := openat(dirfd, name, flags)
	if err == unix.EMFILE || err == unix.ENFILE {
		// The process (or the system) ran out of descriptors before our
		// budget did: others hold them (the caller, another sampler).
		// Take no more, and read the rest by name (see shed).
		st.budget = min(st.budget, st.files)
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	st.files++
	return fd, nil
}

func openat(dirfd int, name []byte, flags int) (int, error) {
	var path [64]byte
	if len(name) >= len(path) {
		return -1, unix.ENAMETOOLONG
	}
	copy(path[:], name)
	path[len(name)] = 0
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
			uintptr(flags|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}

// pread reads the kept-open file fd from offset 0 into st.buf.
func (st *state) pread(fd int) ([]byte, error) {
	st.reads++
	for {
		n, err := unix.Pread(fd, st.buf[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n >= len(st.buf) {
			return nil, fmt.Errorf("%w: file fills %d bytes", procfs.ErrFileParse, len(st.buf))
		}
		return st.buf[:n], nil
	}
}

// readAt reads name under dirfd by opening it: the degraded path.
func (st *state) readAt(dirfd int, name []byte) ([]byte, error) {
	st.reads++
	n, err := procfs.ReadFileAt(dirfd, name, st.buf[:])
	if (err == unix.EMFILE || err == unix.ENFILE) && st.shed() {
		n, err = procfs.ReadFileAt(dirfd, name, st.buf[:])
	}
	if err != nil {
		return nil, err
	}
	return st.buf[:n], nil
}

// shed gives back one descriptor that only saves work (a thread's stat
// file, else a process's pidfd) when the process has none left for a
// read by name, and lowers the budget so that it is not taken again. It
// reports whether one was freed.
func (st *state) shed() bool {
	st.budget = min(st.budget, st.files-1)
	for _, p := range st.procs {
		for _, t := range p.threads {
			if t.statfd >= 0 {
				st.closeFD(&t.statfd)
				return true
			}
		}
	}
	for _, p := range st.procs {
		if p.pidfd >= 0 {
			if st.watch != nil {
				st.watch.Unwatch(p.pidfd)
			}
			st.closeFD(&p.pidfd)
			return true
		}
	}
	return false
}

// readFile reads a task file through its kept-open fd, or by name under
// dirfd where it has none.
func (st *state) readFile(fd, dirfd int, id int, file string) ([]byte, error) {
	if fd >= 0 {
		return st.pread(fd)
	}
	var name [40]byte
	b := strconv.AppendInt(name[:0], int64(id), 10)
	return st.readAt(dirfd, append(append(b, '/'), file...))
}

// gone reports whether err means the task has exited and been reaped: its
// kept-open file has no task (ESRCH), its files or its clock are gone.
func gone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL)
}
