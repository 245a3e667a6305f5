package engine

import (
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// One-shot reads at the syscall floor. A /proc stat file opened before the
// task's CPU clocks (or schedstat) are read and read after them is the
// identity: the kernel binds the open file to its task, so a read that
// succeeds proves the clocks, addressed by id, were that task's. No pidfd,
// no exit watcher. A task found exited takes the handle path, which dates
// its exit and reads its final times.

// openAt opens a /proc file without blocking (a FIFO in a fixture tree)
// and without allocating.
func openAt(path []byte) (int, error) {
	var p [256]byte
	if len(path) >= len(p) {
		return -1, unix.ENAMETOOLONG
	}
	copy(p[:], path)
	dirfd := unix.AT_FDCWD
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&p[0])),
			unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}

// readRunTime opens, reads and closes the schedstat file at path: the
// task's exact run time.
func readRunTime(path []byte) (uint64, error) {
	fd, err := openAt(path)
	if err != nil {
		return 0, sysError(err)
	}
	var buf [256]byte
	n, err := unix.Pread(fd, buf[:], 0)
	unix.Close(fd)
	if err != nil {
		return 0, sysError(err)
	}
	ss, err := procfs.ParseSchedstat(buf[:n])
	if err != nil {
		return 0, sysError(err)
	}
	return ss.RunTime, nil
}

func preadStat(fd int, buf []byte) (procfs.Stat, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return procfs.Stat{}, err
		}
		if n >= len(buf) {
			return procfs.Stat{}, fmt.Errorf("%w: stat larger than %d bytes", ErrInvalidData, len(buf))
		}
		return procfs.ParseStat(buf[:n])
	}
}

// ProcessTimes is cputime.ProcessTimes: the times of process pid, read
// without keeping a handle.
func (eng *Engine) ProcessTimes(pid int) (Times, error) {
	if t, ok, err := eng.oneShotProcessPidfd(pid); ok {
		if err != nil {
			return Times{}, fmt.Errorf("reading times of process %d: %w", pid, err)
		}
		return t, nil
	}
	t, err := eng.oneShotProcess(pid)
	if errors.Is(err, errFoundExited) {
		return eng.openedProcessTimes(pid)
	}
	if err != nil {
		return Times{}, fmt.Errorf("reading times of process %d: %w", pid, err)
	}
	return t, nil
}

var errFoundExited = errors.New("found exited")

func (eng *Engine) oneShotProcess(pid int) (Times, error) {
	var pathBuf [64]byte
	fd, err := openAt(eng.procPath(pathBuf[:0], pid, "stat"))
	if err != nil {
		return Times{}, sysError(err)
	}
	defer unix.Close(fd)
	s, e := sampleClocks(processClock(pid, 0))
	var buf [2048]byte
	st, err := preadStat(fd, buf[:])
	if err != nil {
		return Times{}, sysError(err) // ESRCH: gone, and the clocks may have been another's
	}
	if st.PID != pid {
		return Times{}, fmt.Errorf("%w: /proc/%d/stat names task %d", ErrInvalidData, pid, st.PID)
	}
	if e != 0 {
		if e == unix.EINVAL { // the stat file exists: a thread, not a thread-group leader
			return Times{}, fmt.Errorf("%w: %d is not a process id (a thread id?)", ErrNotFound, pid)
		}
		return Times{}, clockError("process", e)
	}
	if statState(st, true) != kernel.TaskRunning {
		return Times{}, errFoundExited
	}
	t := task{start: st.StartTime, process: true, kthread: st.Flags&pfKthread != 0, clocks: eng.clocks}
	return t.result(s)
}

// ThreadTimes is cputime.ThreadTimes: the times of thread tid, read
// without keeping a handle.
func (eng *Engine) ThreadTimes(tid int) (Times, error) {
	if t, ok, err := eng.oneShotThreadPidfd(tid); ok {
		if err != nil {
			return Times{}, fmt.Errorf("reading times of thread %d: %w", tid, err)
		}
		return t, nil
	}
	t, err := eng.oneShotThread(tid)
	if errors.Is(err, errFoundExited) {
		return eng.openedThreadTimes(tid)
	}
	if err != nil {
		return Times{}, fmt.Errorf("reading times of thread %d: %w", tid, err)
	}
	return t, nil
}

func (eng *Engine) oneShotThread(tid int) (Times, error) {
	var pathBuf [96]byte
	// A thread of this process reads its own CPU clocks: /proc/self/task
	// has only ours.
	path := strconv.AppendInt(append(append(pathBuf[:0], eng.proc.Root()...), "/self/task/"...), int64(tid), 10)
	statFd, err := openAt(append(path, "/stat"...))
	own := err == nil
	if !own {
		path = strconv.AppendInt(eng.procPath(pathBuf[:0], tid, "task/"), int64(tid), 10)
		if statFd, err = openAt(append(path, "/stat"...)); err != nil {
			return Times{}, sysError(err)
		}
	}
	defer unix.Close(statFd)
	var s cpuSample
	var e unix.Errno
	var buf [2048]byte
	if own {
		s, e = sampleClocks(threadClock(tid, 0))
	} else if eng.schedstat() {
		if s.RTime, err = readRunTime(append(path, "/schedstat"...)); err != nil {
			return Times{}, err
		}
	}
	st, err := preadStat(statFd, buf[:])
	if err != nil {
		return Times{}, sysError(err)
	}
	if st.PID != tid {
		return Times{}, fmt.Errorf("%w: %s names task %d", ErrInvalidData, path, st.PID)
	}
	if e != 0 {
		return Times{}, clockError("thread", e)
	}
	if !own {
		s.UTime, s.STime = st.UTime, st.STime
		if !eng.schedstat() {
			s.RTime = ticksToNanos(st.UTime + st.STime)
		}
	}
	if statState(st, false) != kernel.TaskRunning {
		return Times{}, errFoundExited
	}
	t := task{start: st.StartTime, kthread: st.Flags&pfKthread != 0, clocks: eng.clocks}
	return t.result(s)
}

// openedProcessTimes is ProcessTimes through a handle: OpenProcess (without
// the exit watcher), Times, Close.
func (eng *Engine) openedProcessTimes(pid int) (Times, error) {
	p, err := eng.OpenProcess(pid, false, false)
	if err != nil {
		return Times{}, fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer p.Close()
	t, err := p.Times()
	if err != nil {
		return Times{}, fmt.Errorf("reading times of process %d: %w", pid, err)
	}
	return t, nil
}

// openedThreadTimes is ThreadTimes through a handle.
func (eng *Engine) openedThreadTimes(tid int) (Times, error) {
	t, err := eng.OpenThread(tid, false)
	if err != nil {
		return Times{}, fmt.Errorf("opening thread %d: %w", tid, err)
	}
	defer t.Close()
	r, err := t.Times()
	if err != nil {
		return Times{}, fmt.Errorf("reading times of thread %d of process %d: %w", tid, t.PID(), err)
	}
	return r, nil
}
