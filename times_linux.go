package cputime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

var procFS = procfs.NewFS("/proc")

var threadSelfStat = []byte(procFS.Path("thread-self", "stat"))

var selfPID = os.Getpid()

// haveSchedstat reports whether the kernel has per-task schedstat files
// (CONFIG_SCHED_INFO; every major distribution's kernel does). Without them,
// threads of other processes fall back to their stat file's tick counts:
// whole USER_HZ ticks, like every other library's.
var haveSchedstat = sync.OnceValue(func() bool { // a variable: tests force the fallback
	_, err := os.Stat(procFS.Path("self", "schedstat"))
	return err == nil
})

// ticksToNanos converts USER_HZ clock ticks to nanoseconds.
func ticksToNanos(ticks uint64) uint64 { return ticks * (1e9 / userHZ()) }

func getpid() int { return selfPID }
func gettid() int { return unix.Gettid() }

// sysError maps an error of the kernel's interfaces onto the package's
// sentinels, keeping the original in the chain.
func sysError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH), errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrAccessDenied, err)
	case errors.Is(err, procfs.ErrFileParse):
		return err
	}
	return err
}

// clockError is sysError for a failed clock read of the task.
func clockError(what string, e unix.Errno) error {
	return sysError(fmt.Errorf("reading %s CPU clock: %w", what, e))
}

// task is what a handle learns about its task when it opens it.
type task struct {
	start uint64 // start time, USER_HZ ticks since boot
	split *split
}

// times turns a sample of the task's CPU clocks or files into Times, with
// offset the CLOCK_REALTIME − CLOCK_BOOTTIME to date the start with.
func (t *task) times(s cpuSample, offset int64) Times {
	user, kernel := t.split.adjust(s.utime, s.stime, s.rtime)
	// The half tick that makes creation times unbiased would put a task
	// younger than half a tick in the future: never later than now.
	creation := time.Unix(0, bootTicksToUnixNano(t.start, offset))
	if now := time.Now().Round(0); creation.After(now) {
		creation = now
	}
	return Times{
		Creation: creation,
		User:     time.Duration(user),
		Kernel:   time.Duration(kernel),
	}
}

// result is times for a query of one task: the offset read now.
func (t *task) result(s cpuSample) Times { return t.times(s, bootOffset()) }

type processSys struct {
	closed atomic.Bool
	task
}

// readStat reads and parses a stat file; the Stat's Comm aliases buf.
// path is built in a small buffer of the caller's: no allocation.
func readStat(path []byte, buf []byte) (procfs.Stat, error) {
	n, err := procfs.ReadFileAt(unix.AT_FDCWD, path, buf)
	if err != nil {
		return procfs.Stat{}, sysError(fmt.Errorf("reading %s: %w", string(path), err))
	}
	return procfs.ParseStat(buf[:n])
}

// procPath returns root/id/file in dst's storage.
func procPath(dst []byte, id int, file string) []byte {
	dst = append(dst[:0], procFS.Root()...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(id), 10)
	return append(append(dst, '/'), file...)
}

func (p *processSys) open(pid int) error {
	var path [64]byte
	var buf [2048]byte
	st, err := readStat(procPath(path[:0], pid, "stat"), buf[:])
	if err != nil {
		return err
	}
	if st.PID != pid {
		return fmt.Errorf("%w: /proc/%d/stat names pid %d", ErrNotFound, pid, st.PID)
	}
	p.start = st.StartTime
	p.split = splitFor(taskKey{id: int32(pid), start: st.StartTime})
	return nil
}

// self is the task record of the calling process, read once.
var self = sync.OnceValues(func() (*task, error) {
	st, err := procFS.ReadStat(selfPID)
	if err != nil {
		return nil, sysError(err)
	}
	return &task{start: st.StartTime, split: splitFor(taskKey{id: int32(selfPID), start: st.StartTime})}, nil
})

func (p *processSys) times(h *Process) (Times, error) {
	if h.pseudo {
		return currentProcessTimes()
	}
	if p.closed.Load() {
		return Times{}, ErrClosed
	}
	s, e := sampleClocks(processClock(h.pid, 0))
	if e != 0 {
		return Times{}, clockError("process", e)
	}
	return p.result(s), nil
}

// currentProcessTimes serves the CurrentProcess pseudo-handle. Each CPU
// clock read of a process walks all its threads; getrusage walks them once
// for both tick-sampled parts, so two walks instead of three.
func currentProcessTimes() (Times, error) {
	t, err := self()
	if err != nil {
		return Times{}, err
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Times{}, fmt.Errorf("getrusage: %w", err)
	}
	rtime, e := readClock(processClock(0, cpuclockSched))
	if e != 0 {
		return Times{}, clockError("process", e)
	}
	return t.result(cpuSample{utime: uint64(ru.Utime.Nano()), stime: uint64(ru.Stime.Nano()), rtime: rtime}), nil
}

func (p *processSys) close() error {
	if p.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

type threadSys struct {
	closed atomic.Bool
	task
	// For a thread of another process, whose CPU clock the kernel does not
	// let us read: its stat and schedstat files, kept open. The kernel binds
	// an open /proc file to its task, so a reused tid never answers through
	// them: reads fail with ESRCH once the thread is gone.
	mu        sync.Mutex
	stat      *procfs.File
	schedstat *procfs.File
	buf       [2048]byte
}

func (t *threadSys) open(h *Thread, tid int) error {
	status, err := procFS.ReadStatus(tid)
	if err != nil {
		return sysError(err)
	}
	if status.Pid != tid {
		return fmt.Errorf("%w: /proc/%d/status names task %d", ErrNotFound, tid, status.Pid)
	}
	h.pid = status.Tgid
	taskDir := procFS.Path(strconv.Itoa(h.pid), "task", strconv.Itoa(tid))
	stat, err := procfs.OpenFile(taskDir + "/stat")
	if err != nil {
		return sysError(err)
	}
	st, err := t.readStat(stat)
	if err != nil {
		stat.Close()
		return err
	}
	t.start = st.StartTime
	t.split = splitFor(taskKey{id: int32(tid), thread: true, start: st.StartTime})
	if h.pid == selfPID {
		// Our own thread: its CPU clocks are readable and exact.
		return stat.Close()
	}
	t.stat = stat
	if !haveSchedstat() {
		return nil
	}
	schedstat, err := procfs.OpenFile(taskDir + "/schedstat")
	if err != nil {
		stat.Close()
		return sysError(err)
	}
	t.schedstat = schedstat
	return nil
}

func (t *threadSys) readStat(f *procfs.File) (procfs.Stat, error) {
	n, err := f.ReadAt0(t.buf[:])
	if err != nil {
		return procfs.Stat{}, sysError(err)
	}
	return procfs.ParseStat(t.buf[:n])
}

func (t *threadSys) times(h *Thread) (Times, error) {
	if h.pseudo {
		return currentThreadTimes()
	}
	if t.closed.Load() {
		return Times{}, ErrClosed
	}
	if t.stat == nil {
		s, e := sampleClocks(threadClock(h.tid, 0))
		if e != 0 {
			return Times{}, clockError("thread", e)
		}
		return t.result(s), nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() { // closed while we waited for the lock
		return Times{}, ErrClosed
	}
	if t.schedstat == nil {
		st, err := t.readStat(t.stat)
		if err != nil {
			return Times{}, err
		}
		return t.result(cpuSample{utime: st.UTime, stime: st.STime, rtime: ticksToNanos(st.UTime + st.STime)}), nil
	}
	// schedstat first: if the thread has not run since the last read, its
	// tick counters have not moved either, and the last split stands; the
	// stat file, four times dearer, is read only when the total moved.
	n, err := t.schedstat.ReadAt0(t.buf[:])
	if err != nil {
		return Times{}, sysError(err)
	}
	ss, err := procfs.ParseSchedstat(t.buf[:n])
	if err != nil {
		return Times{}, err
	}
	if ss.RunTime <= t.split.total() {
		return t.result(cpuSample{rtime: ss.RunTime}), nil
	}
	st, err := t.readStat(t.stat)
	if err != nil {
		return Times{}, err
	}
	return t.result(cpuSample{utime: st.UTime, stime: st.STime, rtime: ss.RunTime}), nil
}

func (t *threadSys) close() error {
	if t.closed.Swap(true) {
		return ErrClosed
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var err error
	if t.stat != nil {
		err = t.stat.Close()
	}
	if t.schedstat != nil {
		err = errors.Join(err, t.schedstat.Close())
	}
	return err
}

// currentThreadTimes serves the CurrentThread pseudo-handle: the calling
// thread's own clocks (id 0), and its start time from /proc/thread-self.
func currentThreadTimes() (Times, error) {
	var buf [2048]byte
	st, err := readStat(threadSelfStat, buf[:])
	if err != nil {
		return Times{}, err
	}
	s, e := sampleClocks(threadClock(0, 0))
	if e != 0 {
		return Times{}, clockError("thread", e)
	}
	t := task{start: st.StartTime, split: splitFor(taskKey{id: int32(st.PID), thread: true, start: st.StartTime})}
	return t.result(s), nil
}
