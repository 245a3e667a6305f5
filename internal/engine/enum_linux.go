package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// scanner reads the stat and schedstat files of many tasks with one buffer
// and no allocation per file.
type scanner struct {
	buf [2048]byte
	scanConfig
	ids []int // reused for each directory listed
}

// readAt reads the file name, relative to the open directory dirfd, into
// s.buf and returns its contents.
func (s *scanner) readAt(dirfd int, name []byte) ([]byte, error) {
	n, err := procfs.ReadFileAt(dirfd, name, s.buf[:])
	if err != nil {
		return nil, err
	}
	return s.buf[:n], nil
}

// vanished reports whether err means the task exited while we read it: its
// files are gone (ENOENT), the open file no longer has a task (ESRCH), or
// its CPU clock no longer exists (EINVAL).
func vanished(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.EINVAL)
}

// thread reads one thread of pid, given the open directory /proc/pid/task.
func (s *scanner) thread(pid, taskfd, tid int) (ThreadInfo, error) {
	var idbuf [24]byte
	id := strconv.AppendInt(idbuf[:0], int64(tid), 10)
	b, err := s.readAt(taskfd, append(id, "/stat"...))
	if err != nil {
		return ThreadInfo{}, err
	}
	st, err := procfs.ParseStat(b)
	if err != nil {
		return ThreadInfo{}, err
	}
	name := string(st.Comm) // now: it aliases s.buf, which schedstat reuses
	// The evidence of a thread of another process is its stat file's
	// utime and stime; a thread of ours has its own CPU clocks, finer.
	sample := cpuSample{UTime: st.UTime, STime: st.STime}
	if pid == selfPID {
		var e unix.Errno
		if sample, e = sampleClocks(threadClock(tid, 0)); e != 0 {
			return ThreadInfo{}, e
		}
	} else if !s.schedstat {
		sample.RTime = ticksToNanos(st.UTime + st.STime)
	} else {
		b, err := s.readAt(taskfd, append(id, "/schedstat"...))
		if err != nil {
			return ThreadInfo{}, err
		}
		ss, err := procfs.ParseSchedstat(b)
		if err != nil {
			return ThreadInfo{}, err
		}
		sample.RTime = ss.RunTime
	}
	t := task{start: st.StartTime, kthread: st.Flags&pfKthread != 0, clocks: s.clocks}
	times, err := t.times(sample, s.clocks.Now())
	if err != nil {
		return ThreadInfo{}, err
	}
	if statState(st, false) == kernel.TaskExited { // a main thread that ended before its threads
		times = withExit(times, foundExited(pid, tid))
	}
	return ThreadInfo{
		ID:        tid,
		ProcessID: pid,
		Name:      name,
		Times:     times,
	}, nil
}

// threadsOf yields every thread of pid. It returns false if yield asked to
// stop. A process that cannot be listed is reported through yield.
//
// The kernel's listing of a task directory is no snapshot. Each getdents
// batch ends early when the thread it reached last exits before the next
// is looked up, and the next batch resumes by position, counted from the
// main thread: every thread that exited before that position shifts the
// rest, and a thread alive throughout is left out (fs/proc/base.c,
// next_tid and first_tid). So the listing is repeated, for the threads
// not yet read, when threads may have exited while it ran: the scan found
// a listed thread gone, or the directory's link count (2 plus the live
// threads) moved or disagrees with the listing. Up to maxRelists more
// listings are made.
func (s *scanner) threadsOf(proc procfs.FS, pid int, yield func(ThreadInfo, error) bool) bool {
	dir := proc.Path(strconv.Itoa(pid), "task")
	taskfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return yield(ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", pid, sysError(err)))
	}
	defer unix.Close(taskfd)
	var read map[int]bool // the threads read, once a listing is repeated
	for relist := 0; ; relist++ {
		links := dirLinks(taskfd)
		tids, _, err := procfs.AppendDirIDs(taskfd, nil, s.ids[:0])
		s.ids = tids
		if err != nil {
			if relist > 0 && vanished(err) {
				return true // the process went after its threads were read
			}
			return yield(ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", pid, sysError(err)))
		}
		steady := links == 2+uint64(len(tids))
		if read != nil {
			tids = slices.DeleteFunc(tids, func(tid int) bool { return read[tid] })
		}
		var gone atomic.Bool
		if !scanOrdered(tids, s.scanConfig, func(s *scanner, tid int) (ThreadInfo, error) {
			info, err := s.thread(pid, taskfd, tid)
			if err != nil {
				if vanished(err) {
					gone.Store(true)
				}
				return info, fmt.Errorf("reading thread %d of process %d: %w", tid, pid, sysError(err))
			}
			return info, nil
		}, yield) {
			return false
		}
		if steady && !gone.Load() && dirLinks(taskfd) == links || relist == maxRelists {
			return true
		}
		if read == nil {
			read = make(map[int]bool, 2*len(tids))
		}
		for _, tid := range tids {
			read[tid] = true
		}
	}
}

// dirLinks returns the link count of the open directory fd, 0 if it
// cannot be read.
func dirLinks(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return uint64(st.Nlink)
}

// maxRelists bounds the listings threadsOf repeats after threads went:
// a process whose threads come and go without pause would otherwise be
// listed forever.
const maxRelists = 3

// scanConfig is what a scanner takes of its Engine.
type scanConfig struct {
	clocks    *account.Clocks
	schedstat bool // Engine.schedstat
}

func (eng *Engine) scanConfig() scanConfig {
	return scanConfig{clocks: eng.clocks, schedstat: eng.schedstat()}
}

// Threads yields the threads of process pid (cputime.Threads).
func (eng *Engine) Threads(pid int, yield func(ThreadInfo, error) bool) {
	s := &scanner{scanConfig: eng.scanConfig()}
	s.threadsOf(eng.proc, pid, yield)
}

// AllThreads yields every thread of every process (cputime.AllThreads).
func (eng *Engine) AllThreads(yield func(ThreadInfo, error) bool) {
	pids, err := eng.proc.PIDs()
	if err != nil {
		yield(ThreadInfo{}, fmt.Errorf("listing processes: %w", sysError(err)))
		return
	}
	s := &scanner{scanConfig: eng.scanConfig()}
	for _, pid := range pids {
		cont := s.threadsOf(eng.proc, pid, func(info ThreadInfo, err error) bool {
			if err != nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrAccessDenied)) {
				return true // the process exited or is hidden: skip it
			}
			return yield(info, err)
		})
		if !cont {
			return
		}
	}
}

// process reads one process, given the open /proc directory.
func (s *scanner) process(procfd, pid int) (ProcessInfo, error) {
	var name [24]byte
	b, err := s.readAt(procfd, append(strconv.AppendInt(name[:0], int64(pid), 10), "/stat"...))
	if err != nil {
		return ProcessInfo{}, err
	}
	st, err := procfs.ParseStat(b)
	if err != nil {
		return ProcessInfo{}, err
	}
	// The process's CPU clocks, as every reader of a process reads them:
	// the exact total, exited threads included, and the tick samples that
	// split it. No permission needed.
	clock := pid
	if pid == selfPID {
		clock = 0
	}
	sample, e := sampleClocks(processClock(clock, 0))
	if e != 0 {
		return ProcessInfo{}, e
	}
	t := task{start: st.StartTime, process: true, kthread: st.Flags&pfKthread != 0, clocks: s.clocks}
	times, err := t.times(sample, s.clocks.Now())
	if err != nil {
		return ProcessInfo{}, err
	}
	if statState(st, true) == kernel.TaskExited { // a zombie: every path agrees it has exited
		times = withExit(times, foundExited(pid, pid))
	}
	return ProcessInfo{
		ID:       pid,
		ParentID: st.PPID,
		Name:     string(st.Comm),
		Threads:  st.NumThreads,
		Times:    times,
	}, nil
}

// Processes yields every process (cputime.Processes).
func (eng *Engine) Processes(yield func(ProcessInfo, error) bool) {
	procfd, err := unix.Open(eng.proc.Root(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		yield(ProcessInfo{}, fmt.Errorf("opening %s: %w", eng.proc.Root(), sysError(err)))
		return
	}
	defer unix.Close(procfd)
	pids, _, err := procfs.AppendDirIDs(procfd, nil, nil)
	if err != nil {
		yield(ProcessInfo{}, fmt.Errorf("listing processes: %w", sysError(err)))
		return
	}
	scanOrdered(pids, eng.scanConfig(), func(s *scanner, pid int) (ProcessInfo, error) {
		info, err := s.process(procfd, pid)
		if err != nil {
			// The id goes with the error: a caller that lists what it
			// may not read (access denied) can say which.
			return ProcessInfo{ID: pid}, fmt.Errorf("reading process %d: %w", pid, sysError(err))
		}
		return info, nil
	}, yield)
}

// ProcessInfoOf reads one process as Processes lists it
// (cputime.ProcessInfoOf).
func (eng *Engine) ProcessInfoOf(pid int) (ProcessInfo, error) {
	procfd, err := unix.Open(eng.proc.Root(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ProcessInfo{}, sysError(err)
	}
	defer unix.Close(procfd)
	s := &scanner{scanConfig: eng.scanConfig()}
	info, err := s.process(procfd, pid)
	return info, sysError(err)
}
