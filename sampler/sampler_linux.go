package sampler

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// procRoot is where proc is mounted; a variable for tests.
var procRoot = "/proc"

// usePidfd is whether processes get a pidfd (exact exit instants, a cheap
// identity check); a variable so that tests exercise the fallback.
var usePidfd = true

var selfPID = os.Getpid()

// sys is the Linux sampler: the state lives in *state so that a cleanup
// attached to the Sampler can close its descriptors without keeping the
// Sampler reachable.
type sys struct {
	st *state
}

// state is everything the Linux sampler keeps between refreshes.
type state struct {
	opts    *Options
	procfd  int // the proc root, kept open
	procs   map[int]*proc
	order   []*proc // live entries sorted by pid; rebuilt when the set changes
	dirty   bool    // order needs rebuilding
	budget  int
	files   int // descriptors held now, procfd and the watcher's included
	gen     uint32
	offset  int64 // the boot offset of this refresh
	now     time.Time
	mono    int64 // account.Mono at the start of this refresh, before any read
	buf     [4096]byte
	dents   []byte
	ids     []int
	pids    []int
	stat    procfs.Stat         // the last thread stat read (Comm not kept)
	ended   []ended             // the threads of the process being read that went this refresh
	watch   *kernel.ExitWatcher // nil without pidfds
	reads   int
	scans   int
	degrade int
}

// proc is one process, bound to its task by its kept-open stat file (and
// its pidfd, if any): a reused pid gets a new proc, never this one.
type proc struct {
	pid       int
	statfd    int // /proc/PID/stat, or -1 when over budget (identity by start time)
	pidfd     int // -1 without one
	taskfd    int // /proc/PID/task, with Options.Threads and a matching name; else -1
	start     uint64
	creation  time.Time
	credOff   int64 // the offset creation was computed with
	name      string
	state     byte
	kthread   bool
	nthreads  int
	matched   bool
	reported  bool   // in the samples of an earlier refresh
	zombie    bool   // reported exited; kept only so the listing does not see it as new
	seen      uint32 // generation of the last refresh that found it
	out       uint32 // generation of the last refresh that reports it
	split     account.Split
	rtime     uint64 // SCHED clock at the last read
	total     uint64 // user + kernel last reported
	user, ker uint64
	lastAlive time.Time
	exitNs    atomic.Int64 // the watcher's wake instant, Unix ns; 0 until then
	threads   map[int]*thread
	torder    []*thread
	tdirty    bool
	// threadsKnown says every thread was read at the last refresh and is
	// all there is (readKnown), with the process's SCHED clock at threadsAt
	// read before them: see keepThreads.
	threadsKnown bool
	threadsAt    uint64
	replaced     bool   // the main thread's id named another task in this refresh
	ino          uint64 // pidfs inode of its pid, without statfd and pidfd (identify); 0 if unknown
}

// thread is one thread, bound to its task by its kept-open schedstat file.
type thread struct {
	tid       int
	schedfd   int // -1: read by opening (over budget)
	statfd    int // -1: opened when the times move (over budget)
	start     uint64
	creation  time.Time
	credOff   int64
	name      string
	state     byte
	kthread   bool
	seen      uint32
	out       uint32
	read      uint32 // generation of the last refresh that read it
	nthreads  int    // the main thread's: num_threads at its last stat read
	zombie    bool   // an exited main thread, reported once
	reported  bool
	split     account.Split
	runtime   uint64 // schedstat run time at the last read
	wait      uint64 // schedstat wait time and timeslices at the last read
	slices    uint64
	readAt    int64  // account.Mono no later than the last schedstat read
	base      uint64 // CPU reported under another id (exec in a non-main thread): not in a New entry's Delta
	total     uint64
	user, ker uint64
	lastAlive time.Time
	fresh     bool   // stat read at open, not yet used
	ino       uint64 // pidfs inode of its pid, for reads by name (identify); 0 if unknown
}

func (s *sys) init(opts *Options) error {
	st := &state{opts: opts, procs: make(map[int]*proc), procfd: -1, dents: make([]byte, 64<<10)}
	st.budget = fileBudget(opts.MaxFiles)
	fd, err := unix.Open(procRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", procRoot, err)
	}
	st.procfd = fd
	st.files = 1
	if usePidfd && st.files+1 <= st.budget {
		if w, err := kernel.NewExitWatcher("cputime-sampler-exits"); err == nil {
			st.watch = w
			st.files++
		}
	}
	s.st = st
	return nil
}

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

func (s *sys) stats() Stats {
	st := s.st
	return Stats{Files: st.files, Budget: st.budget, Degraded: st.degrade, Reads: st.reads, Scans: st.scans}
}

func (s *sys) close() error {
	if s.st == nil {
		return nil
	}
	s.st.closeAll()
	s.st = nil
	return nil
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

// CPU clocks, read as the root package reads them (internal/kernel).
const cpuclockSched = kernel.ClockSched

func processClock(pid int) int32 { return kernel.ProcessClock(pid, 0) }
func threadClock(tid int) int32  { return kernel.ThreadClock(tid, 0) }

func (st *state) clock(id int32) (uint64, error) {
	st.reads++
	ns, e := kernel.ReadClock(id)
	if e != 0 {
		return 0, e
	}
	return ns, nil
}

// ticks reads the tick-sampled VIRT and PROF clocks of base: user and
// kernel time, the evidence that splits a process's or own thread's time.
func (st *state) ticks(base int32) (utime, stime uint64, err error) {
	st.reads += 2
	utime, stime, e := kernel.ReadTicks(base)
	if e != 0 {
		return 0, 0, e
	}
	return utime, stime, nil
}

// listing reads the numeric names of the directory dirfd with one pass of
// getdents from its start into st.ids.
func (st *state) listing(dirfd int) error {
	ids, calls, err := procfs.AppendDirIDs(dirfd, st.dents, st.ids[:0])
	st.ids, st.scans = ids, st.scans+calls
	return err
}

func (s *sys) refresh(dst *Sample) error {
	st := s.st
	if st == nil {
		return ErrClosed
	}
	st.gen++
	st.reads, st.scans = 0, 0
	st.now = dst.Time
	st.mono = account.Mono()
	st.offset = account.BootOffset()
	first := dst.First

	// The processes to look at: the listed ones, or all of /proc.
	if len(st.opts.PIDs) > 0 {
		st.ids = append(st.ids[:0], st.opts.PIDs...)
		slices.Sort(st.ids)
		st.ids = slices.Compact(st.ids)
	} else if err := st.listing(st.procfd); err != nil {
		return fmt.Errorf("listing %s: %w", procRoot, err)
	}
	listed := time.Now() // every process absent from the listing was gone by now
	st.pids = append(st.pids[:0], st.ids...)
	for _, pid := range st.pids {
		p := st.procs[pid]
		if p != nil && st.readProc(p, dst, first) {
			p.seen = st.gen
			continue
		}
		// Not tracked, or read as gone while its id is listed: the id
		// names a new process (or none).
		if p = st.openProc(pid, dst, first); p != nil {
			p.seen = st.gen
		}
	}
	for _, p := range st.procs {
		if p.seen != st.gen {
			// No longer listed: gone.
			if !p.zombie && p.reported {
				st.exitProc(p, dst, listed, false)
			}
			st.dropProc(p)
		}
	}
	if st.dirty {
		st.order = st.order[:0]
		for _, p := range st.procs {
			st.order = append(st.order, p)
		}
		slices.SortFunc(st.order, func(a, b *proc) int { return a.pid - b.pid })
		st.dirty = false
	}
	slices.SortFunc(dst.ExitedProcesses, func(a, b Exited) int { return a.PID - b.PID })
	slices.SortFunc(dst.ExitedThreads, func(a, b Exited) int {
		if a.PID != b.PID {
			return a.PID - b.PID
		}
		return a.TID - b.TID
	})
	for _, p := range st.order {
		if p.out != st.gen {
			continue
		}
		st.creation(p.start, &p.creation, &p.credOff)
		dst.Processes = append(dst.Processes, p.task(first))
		p.reported = true
		for _, t := range p.torder {
			if t.out == st.gen {
				// Dated with this refresh's offset, run or not (a step).
				st.creation(t.start, &t.creation, &t.credOff)
				dst.Threads = append(dst.Threads, t.task(p, first))
				t.reported = true
			}
		}
	}
	return nil
}

func (p *proc) task(first bool) Task {
	t := Task{
		PID: p.pid, Name: p.name, State: p.state, KernelThread: p.kthread, Threads: p.nthreads,
		Times: cputime.Times{Creation: p.creation, User: time.Duration(p.user), Kernel: time.Duration(p.ker)},
	}
	if !first {
		if p.reported {
			t.Delta = time.Duration(p.user + p.ker - p.total)
		} else {
			t.Delta = time.Duration(p.user + p.ker)
			t.New = true
		}
	}
	p.total = p.user + p.ker
	return t
}

func (t *thread) task(p *proc, first bool) Task {
	r := Task{
		PID: p.pid, TID: t.tid, Name: t.name, State: t.state, KernelThread: t.kthread,
		Times: cputime.Times{Creation: t.creation, User: time.Duration(t.user), Kernel: time.Duration(t.ker)},
	}
	if !first {
		if t.reported {
			r.Delta = time.Duration(t.user + t.ker - t.total)
		} else {
			r.Delta = time.Duration(t.user + t.ker - min(t.base, t.user+t.ker))
			r.New = true
		}
	}
	t.total = t.user + t.ker
	return r
}

// creation dates a start time, recomputed only when the offset changed
// (a clock step).
func (st *state) creation(start uint64, c *time.Time, off *int64) {
	if !c.IsZero() && *off == st.offset {
		return
	}
	*c = account.Creation(start, st.offset)
	*off = st.offset
}

// readStatus is the outcome of reading a task.
type readStatus uint8

const (
	readOK       readStatus = iota
	readGone                // exited and reaped (or the id names another task now)
	readReplaced            // the main thread's id names another task: an exec in another thread took it
	readFailed              // an error for this refresh, recorded in Sample.Errors
)

// openProc starts tracking process pid; nil if it is not there (or cannot
// be read, the error recorded where the caller named this pid).
func (st *state) openProc(pid int, dst *Sample, first bool) *proc {
	var name [24]byte
	path := append(strconv.AppendInt(name[:0], int64(pid), 10), "/stat"...)
	p := &proc{pid: pid, statfd: -1, pidfd: -1, taskfd: -1}
	fd, err := st.openAt(st.procfd, path, 0, 0)
	if err != nil {
		if !gone(err) && len(st.opts.PIDs) > 0 {
			dst.Errors = append(dst.Errors, taskError(pid, 0, err))
		}
		if errors.Is(err, os.ErrPermission) {
			st.denied(pid, dst)
		}
		return nil
	}
	p.statfd = fd
	if fd < 0 && identify(pid, false, &p.ino) != readOK {
		return nil // learned before the reads, checked after them (readProc)
	}
	if st.watch != nil && st.files+1 <= st.budget {
		if pfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
			p.pidfd = pfd
			st.files++
		}
	}
	st.procs[pid] = p
	st.dirty = true
	// The stat read after pidfd_open proves the pidfd is this task's: the
	// stat file is bound to the task, and the pid could not have been
	// reused while the task was there.
	if st.readProcStat(p, dst, true) != readOK {
		st.dropProc(p)
		return nil
	}
	if p.pidfd >= 0 {
		exitNs := &p.exitNs
		if st.watch.Watch(p.pidfd, func(at time.Time) { exitNs.CompareAndSwap(0, at.UnixNano()) }) != nil {
			st.closeFD(&p.pidfd)
		}
	}
	if !st.readProc(p, dst, first) {
		return nil
	}
	return p
}

// readProcStat reads the stat file of p: when it is opened, when its times
// moved, and as the identity check where there is no pidfd.
func (st *state) readProcStat(p *proc, dst *Sample, open bool) readStatus {
	b, err := st.readFile(p.statfd, st.procfd, p.pid, "stat")
	if err != nil {
		if gone(err) {
			return readGone
		}
		if open && errors.Is(err, os.ErrPermission) {
			st.denied(p.pid, dst)
			if len(st.opts.PIDs) == 0 {
				return readFailed // not an error of the sample, but counted
			}
		}
		dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
		return readFailed
	}
	s, err := procfs.ParseStat(b)
	if err == nil && open {
		err = account.CheckStart(s.StartTime, st.offset)
	}
	if err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
		return readFailed
	}
	if open {
		p.start = s.StartTime
		p.kthread = s.Flags&account.PFKthread != 0
		st.creation(p.start, &p.creation, &p.credOff)
	} else if p.statfd < 0 && s.StartTime != p.start {
		return readGone // read by name, and the pid names another task now
	}
	if open || string(s.Comm) != p.name {
		p.name = string(s.Comm)
		matched := st.opts.Match == nil || st.opts.Match(p.name)
		if matched != p.matched {
			p.matched = matched
			p.reported = false // (re)appears as new, or leaves quietly
		}
	}
	p.state = s.State
	p.nthreads = s.NumThreads
	return readOK
}

// stillOurs reports whether p's pid still names p's task, after reads by
// pid and by name with no stat file kept: its pidfd has not seen it
// reaped, or (without one) its pidfs inode is the same (identify).
func (st *state) stillOurs(p *proc) bool {
	if p.pidfd >= 0 {
		state, err := pidfdState(p.pidfd)
		return err == nil && state != taskGone
	}
	return identify(p.pid, false, &p.ino) != readGone
}

// denied adds process pid, whose files may not be read, to dst.Denied with
// what its CPU clocks say: they need no permission.
func (st *state) denied(pid int, dst *Sample) {
	t := Task{PID: pid}
	base := processClock(pid)
	if rtime, err := st.clock(base | cpuclockSched); err == nil {
		if utime, stime, err := st.ticks(base); err == nil {
			u, k := account.Rule(account.Evidence{UTime: utime, STime: stime, RTime: rtime})
			t.Times.User, t.Times.Kernel = time.Duration(u), time.Duration(k)
		}
	} else if gone(err) {
		return
	}
	dst.Denied = append(dst.Denied, t)
}

// procGone reports p exited (if it was reported alive before) and forgets it.
func (st *state) procGone(p *proc, dst *Sample) {
	if p.reported && !p.zombie && p.matched {
		st.exitProc(p, dst, time.Now(), false)
	}
	st.dropProc(p)
}

// exitProc adds p (and its threads) to the exited tasks, last seen at
// p.lastAlive and known gone at goneAt. final says p's times were read
// after its exit (a zombie): its Delta counts.
func (st *state) exitProc(p *proc, dst *Sample, goneAt time.Time, final bool) {
	st.creation(p.start, &p.creation, &p.credOff)
	e := Exited{Task: p.task(false), LastSeen: p.lastAlive, GoneAt: goneAt}
	e.New = false
	if !final {
		e.Delta = 0
	}
	if ns := p.exitNs.Load(); ns != 0 {
		// The watcher's wake instant, clamped into the bracket the reads
		// established (the clocks' readings differ by nanoseconds).
		e.Times.Exit = time.Unix(0, ns)
		e.Times.ExitSource = cputime.ExitObserved
		if e.Times.Exit.Before(e.LastSeen) {
			e.Times.Exit = e.LastSeen
		}
		if e.Times.Exit.After(e.GoneAt) {
			e.Times.Exit = e.GoneAt
		}
	}
	dst.ExitedProcesses = append(dst.ExitedProcesses, e)
	for _, t := range p.torder {
		if t.reported && !t.zombie {
			st.creation(t.start, &t.creation, &t.credOff)
			te := Exited{Task: t.task(p, false), LastSeen: t.lastAlive, GoneAt: e.GoneAt}
			te.New, te.Delta = false, 0
			te.Times.Exit, te.Times.ExitSource = e.Times.Exit, e.Times.ExitSource
			dst.ExitedThreads = append(dst.ExitedThreads, te)
		}
	}
}

// readProc reads p's times (and its threads'). It returns false if p was
// found gone and dropped; p is reported in this refresh if p.out is set.
func (st *state) readProc(p *proc, dst *Sample, first bool) bool {
	if p.zombie {
		// Exited and reported: only its disappearance is awaited.
		if _, err := st.readFile(p.statfd, st.procfd, p.pid, "stat"); err != nil && gone(err) {
			st.dropProc(p)
			return false
		}
		return true
	}
	clock := p.pid
	if p.pid == selfPID {
		clock = 0
	}
	base := processClock(clock)
	rtime, err := st.clock(base | cpuclockSched)
	if err != nil {
		st.procGone(p, dst)
		return false
	}
	moved := rtime != p.rtime || !p.reported
	var utime, stime uint64
	if moved && p.matched {
		if utime, stime, err = st.ticks(base); err != nil {
			st.procGone(p, dst)
			return false
		}
	}
	// The identity check after the clock reads, which went by pid: the
	// pidfd (or the kept-open stat file) still has our task, so the pid
	// was ours when the clocks were read.
	exited := false
	if p.pidfd >= 0 && !moved {
		switch state, err := pidfdState(p.pidfd); {
		case err != nil || state == taskGone:
			st.procGone(p, dst)
			return false
		case state == taskExited:
			exited = true
		}
	} else {
		switch st.readProcStat(p, dst, false) {
		case readGone:
			st.procGone(p, dst)
			return false
		case readFailed:
			return true
		}
		if p.statfd < 0 && !st.stillOurs(p) {
			st.procGone(p, dst) // read by name, and the pid names another task now
			return false
		}
		// The stat file shows the main thread's state: a zombie main
		// thread whose other threads run is a live process (the kernel
		// counts the zombie among num_threads until the last thread goes).
		exited = (p.state == 'Z' || p.state == 'X') && p.nthreads <= 1
	}
	if !p.matched {
		p.rtime = rtime
		return true
	}
	if moved {
		e := account.Evidence{UTime: utime, STime: stime, RTime: rtime, KThread: p.kthread}
		if err := check(e, p.start, true, st.offset); err != nil {
			dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
			return true
		}
		p.user, p.ker = p.split.Adjust(e)
		p.rtime = rtime
	}
	st.creation(p.start, &p.creation, &p.credOff)
	if exited {
		// A zombie: its times are final. Report it exited, once, and
		// keep it so that the listing does not take it for a new one.
		if p.reported {
			st.exitProc(p, dst, time.Now(), true)
		}
		p.zombie = true
		return true
	}
	p.lastAlive = st.now
	p.out = st.gen
	if st.opts.Threads {
		if p.threadsKnown && p.threadsAt == rtime && p.pid != selfPID {
			st.keepThreads(p)
		} else {
			p.threadsKnown = st.readThreads(p, dst)
			p.threadsAt = rtime
		}
	}
	return true
}

// keepThreads reports p's threads as last read, without reading them: p's
// exact total (its SCHED clock, every thread's run time and its exited
// threads') has not moved since before that read, so none of its threads
// has run since. A thread that ran, was created (its creator ran) or exited
// (it ran to exit) would have moved it. So their times, the thread list
// and every state a thread reaches by running are as last read; what
// changes without running (a sleeper woken but not yet on a CPU, a name
// written from outside) waited for the thread's next run before too, as
// the stat file is read only when schedstat moved. An idle process of
// 1,000 threads then refreshes with its clock read and its pidfd polled.
func (st *state) keepThreads(p *proc) {
	for _, t := range p.torder {
		t.read, t.seen = st.gen, st.gen
		if !t.zombie { // an exited main thread, reported once
			t.out = st.gen
			t.lastAlive = st.now
		}
	}
}

func check(e account.Evidence, start uint64, process bool, offset int64) error {
	err := account.CheckTicks(e)
	if err == nil {
		err = account.CheckRuntime(e.RTime, start, process, offset)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", cputime.ErrInvalidData, err)
	}
	return nil
}

func taskError(pid, tid int, err error) error {
	switch {
	case errors.Is(err, os.ErrPermission):
		err = fmt.Errorf("%w: %w", cputime.ErrAccessDenied, err)
	case errors.Is(err, procfs.ErrFileParse):
		err = fmt.Errorf("%w: %w", cputime.ErrInvalidData, err)
	}
	if tid != 0 {
		return fmt.Errorf("reading thread %d of process %d: %w", tid, pid, err)
	}
	return fmt.Errorf("reading process %d: %w", pid, err)
}

// readThreads lists p's threads with one getdents pass over its kept-open
// task directory and reads each. It reports whether every thread p has was
// read, and is known to be all of them (readKnown).
func (st *state) readThreads(p *proc, dst *Sample) bool {
	if p.taskfd < 0 {
		var name [24]byte
		path := append(strconv.AppendInt(name[:0], int64(p.pid), 10), "/task"...)
		fd, err := st.openAt(st.procfd, path, unix.O_DIRECTORY, 0)
		if err == nil && fd < 0 {
			// Over budget: the directory is opened for this refresh
			// only, and its threads are read by name under it.
			fd, err = openat(st.procfd, path, unix.O_DIRECTORY)
			if (err == unix.EMFILE || err == unix.ENFILE) && st.shed() {
				fd, err = openat(st.procfd, path, unix.O_DIRECTORY)
			}
			if err == nil {
				defer func() {
					unix.Close(p.taskfd)
					p.taskfd = -1
				}()
			}
		}
		if err != nil {
			if !gone(err) {
				dst.Errors = append(dst.Errors, taskError(p.pid, 0, err))
			}
			return false
		}
		p.taskfd = fd
		if p.threads == nil {
			p.threads = make(map[int]*thread)
		}
	}
	st.ended = st.ended[:0]
	p.replaced = false
	if st.readKnown(p, dst) {
		return true
	}
	if err := st.listing(p.taskfd); err != nil {
		return false // the process is going: its threads go with it
	}
	listed := time.Now()
	for _, tid := range st.ids {
		t := p.threads[tid]
		if t != nil && t.read == st.gen {
			t.seen = st.gen // read by readKnown
			continue
		}
		if t != nil {
			switch st.readThread(p, t, dst) {
			case readOK, readFailed:
				t.seen = st.gen
				continue
			case readReplaced:
				p.replaced = true
			}
			// Read as gone while listed: the tid names a new thread.
			st.threadGone(p, t, dst, time.Now())
		}
		if t = st.openThread(p, tid, dst); t != nil {
			t.seen = st.gen
			p.tdirty = true
		}
	}
	for _, t := range p.threads {
		if t.seen != st.gen {
			st.threadGone(p, t, dst, listed)
		}
	}
	if t := p.threads[p.pid]; p.replaced && t != nil && !t.reported {
		st.continueExec(t)
	}
	if p.tdirty {
		p.torder = p.torder[:0]
		for _, t := range p.threads {
			p.torder = append(p.torder, t)
		}
		slices.SortFunc(p.torder, func(a, b *thread) int { return a.tid - b.tid })
		p.tdirty = false
	}
	return false
}

// readKnown reads the threads p is known to have, the main thread first,
// and reports whether they are all there is: then the listing of the task
// directory (a getdents pass, which costs the kernel more than the reads)
// is not needed. The main thread's stat, read first, counts the live
// threads (num_threads); every known thread read after it was alive when
// it was counted (it was alive before and after), so if none of them has
// gone and the count equals theirs, no other thread was alive then. One
// created since is found by the next refresh, as if it had been created
// after this one.
func (st *state) readKnown(p *proc, dst *Sample) bool {
	leader := p.threads[p.pid]
	if leader == nil || leader.zombie || p.tdirty || len(p.torder) != len(p.threads) {
		return false
	}
	all := true
	for i := -1; i < len(p.torder); i++ {
		t := leader // first
		if i >= 0 {
			if t = p.torder[i]; t == leader {
				continue
			}
		}
		switch st.readThread(p, t, dst) {
		case readOK:
			t.read = st.gen
		case readFailed:
			t.read = st.gen
			all = false
		case readReplaced:
			st.threadGone(p, t, dst, time.Now())
			p.replaced = true
			return false
		default:
			all = false
		}
	}
	if !all || leader.nthreads != len(p.threads) {
		return false
	}
	for _, t := range p.torder {
		t.seen = st.gen
	}
	return true
}

func (st *state) threadGone(p *proc, t *thread, dst *Sample, goneAt time.Time) {
	if t.reported && !t.zombie {
		st.threadExited(p, t, dst, goneAt)
	}
	if t.tid != p.pid {
		st.ended = append(st.ended, ended{runtime: t.runtime, wait: t.wait, slices: t.slices, readAt: t.readAt, total: t.total})
	}
	st.dropThread(t)
	delete(p.threads, t.tid)
	p.tdirty = true
}

func (st *state) threadExited(p *proc, t *thread, dst *Sample, goneAt time.Time) {
	st.creation(t.start, &t.creation, &t.credOff)
	e := Exited{Task: t.task(p, false), LastSeen: t.lastAlive, GoneAt: goneAt}
	e.New, e.Delta = false, 0
	dst.ExitedThreads = append(dst.ExitedThreads, e)
}

// openThread starts tracking thread tid of p; nil if it is gone already.
func (st *state) openThread(p *proc, tid int, dst *Sample) *thread {
	t := &thread{tid: tid, schedfd: -1, statfd: -1}
	var name [32]byte
	id := strconv.AppendInt(name[:0], int64(tid), 10)
	// schedstat gets a descriptor while the budget lasts, stat only while
	// half of it is left: more threads keep the file that binds them and
	// is read every time; stat is read only when the times move.
	fd, err := st.openAt(p.taskfd, append(id, "/schedstat"...), 0, 0)
	if err != nil {
		return nil
	}
	t.schedfd = fd
	if fd < 0 {
		st.degrade++
		// Learned before the reads, checked after them (readThread).
		if identify(tid, true, &t.ino) != readOK {
			st.dropThread(t)
			return nil
		}
	}
	if st.files+1 <= st.budget/2 {
		if fd, err := st.openAt(p.taskfd, append(id, "/stat"...), 0, 0); err == nil {
			t.statfd = fd
		}
	}
	if st.readThreadStat(p, t, dst, true) != readOK {
		st.dropThread(t)
		return nil
	}
	t.fresh = true
	p.threads[tid] = t
	if st.readThread(p, t, dst) == readGone {
		st.dropThread(t)
		delete(p.threads, tid)
		return nil
	}
	return t
}

// readThreadStat reads t's stat file: at open, when its times moved, and
// for a process's main thread each time (an exited main thread, a zombie
// while other threads run, has a run time that never moves again).
func (st *state) readThreadStat(p *proc, t *thread, dst *Sample, open bool) readStatus {
	b, err := st.readFile(t.statfd, p.taskfd, t.tid, "stat")
	if err != nil {
		if gone(err) {
			return readGone
		}
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	s, err := procfs.ParseStat(b)
	if err == nil && open {
		err = account.CheckStart(s.StartTime, st.offset)
	}
	if err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	if open {
		t.start = s.StartTime
		t.kthread = s.Flags&account.PFKthread != 0
	} else if t.schedfd < 0 && s.StartTime != t.start {
		return readGone // read by name, and the tid names another thread now
	}
	if string(s.Comm) != t.name {
		t.name = string(s.Comm)
	}
	t.state = s.State
	t.nthreads = s.NumThreads
	s.Comm = nil
	st.stat = s
	return readOK
}

// readThread reads t's times: one pread of schedstat when they have not
// moved. t is reported in this refresh if t.out is set. A thread without a
// kept-open file (over budget) is read by name, and its identity checked
// after the reads (identify): if its id names another task by then, what
// was read counts for nothing.
func (st *state) readThread(p *proc, t *thread, dst *Sample) readStatus {
	if t.schedfd >= 0 {
		return st.readThreadTimes(p, t, dst)
	}
	// What an Exited entry shows of t, should the reads turn out to be
	// another task's (t is then dropped: the rest does not matter).
	type shown struct {
		name             string
		state            byte
		zombie           bool
		user, ker, total uint64
		creation         time.Time
		lastAlive        time.Time
	}
	saved := shown{t.name, t.state, t.zombie, t.user, t.ker, t.total, t.creation, t.lastAlive}
	nx, ne := len(dst.ExitedThreads), len(dst.Errors)
	r := st.readThreadTimes(p, t, dst)
	if r != readGone && identify(t.tid, true, &t.ino) == readGone {
		t.name, t.state, t.zombie, t.user, t.ker, t.total, t.creation, t.lastAlive =
			saved.name, saved.state, saved.zombie, saved.user, saved.ker, saved.total, saved.creation, saved.lastAlive
		dst.ExitedThreads, dst.Errors = dst.ExitedThreads[:nx], dst.Errors[:ne]
		return readGone
	}
	return r
}

// readThreadTimes is readThread, its identity settled or bound by a file.
func (st *state) readThreadTimes(p *proc, t *thread, dst *Sample) readStatus {
	if t.zombie {
		// An exited main thread, awaiting its disappearance. A zombie
		// never lives again: if its id reads a live task, a thread that
		// called exec took it (see sameTask).
		switch r := st.readThreadStat(p, t, dst, false); {
		case r != readOK:
			return r
		case t.state != 'Z' && t.state != 'X':
			return st.replaced(p, t)
		}
		return readOK
	}
	b, err := st.readFile(t.schedfd, p.taskfd, t.tid, "schedstat")
	if err != nil {
		if gone(err) {
			return readGone
		}
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	ss, err := procfs.ParseSchedstat(b)
	if err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	// Only the main thread's id can change hands under a kept-open file;
	// any id read by name can (see sameTask).
	if t.reported && (t.tid == p.pid || t.schedfd < 0) && !st.sameTask(t, ss) {
		return st.replaced(p, t)
	}
	t.wait, t.slices, t.readAt = ss.WaitTime, ss.Timeslices, st.mono
	if ss.RunTime == t.runtime && t.reported {
		if t.tid == p.pid {
			if r := st.readThreadStat(p, t, dst, false); r != readOK {
				return r
			}
			if t.state == 'Z' || t.state == 'X' {
				st.threadExited(p, t, dst, time.Now())
				t.zombie = true
				return readOK
			}
		}
		t.lastAlive = st.now
		t.out = st.gen
		return readOK
	}
	if !t.fresh { // stat was read at open, just now
		if r := st.readThreadStat(p, t, dst, false); r != readOK {
			return r
		}
	}
	t.fresh = false
	s := st.stat
	e := account.Evidence{UTime: s.UTime, STime: s.STime, RTime: ss.RunTime, KThread: t.kthread}
	if p.pid == selfPID {
		// Our own threads: their thread CPU clocks, exact to the
		// nanosecond; the schedstat read after them proves the tid was
		// still this thread's.
		base := threadClock(t.tid)
		if e.UTime, e.STime, err = st.ticks(base); err == nil {
			e.RTime, err = st.clock(base | cpuclockSched)
		}
		if err == nil {
			_, err = st.readFile(t.schedfd, p.taskfd, t.tid, "schedstat")
		}
		if err != nil {
			return readGone
		}
	}
	if err := check(e, t.start, false, st.offset); err != nil {
		dst.Errors = append(dst.Errors, taskError(p.pid, t.tid, err))
		return readFailed
	}
	t.user, t.ker = t.split.Adjust(e)
	t.runtime = ss.RunTime
	st.creation(t.start, &t.creation, &t.credOff)
	if t.state == 'Z' || t.state == 'X' {
		if t.reported {
			st.threadExited(p, t, dst, time.Now())
		}
		t.zombie = true
		return readOK
	}
	t.lastAlive = st.now
	t.out = st.gen
	return readOK
}

// tickSlack is how far a schedstat run time can lag behind the thread's
// use of the CPU: the kernel adds a running thread's time at each
// scheduler tick and switch, and a tick lasts at most 10 ms (HZ >= 100).
const tickSlack = 10 * time.Millisecond

// sameTask reports whether ss can be a later reading of the task t was
// last read from: each counter of a task only grows, and its run time by
// no more than the time between the two reads (one CPU), give or take one
// tick of lag. A kept-open file is bound to its tid's kernel pid, which
// one event hands to another task: a thread other than the main one calls
// exec, and the kernel gives it the main thread's id (de_thread swaps the
// two tasks' pids and releases the old main thread, whose start time the
// new one takes). Read by name (over budget), a reused tid names another
// task too. Either way the counters jump or go back, except where the new
// task's run time lies within one interval of the old one's: then the
// sampler cannot tell, and credits the difference (at most one CPU) to the
// old entry.
func (st *state) sameTask(t *thread, ss procfs.Schedstat) bool {
	if ss.RunTime < t.runtime || ss.WaitTime < t.wait || ss.Timeslices < t.slices {
		return false
	}
	grew := int64(ss.RunTime - t.runtime)
	if grew <= st.mono-t.readAt+int64(tickSlack) {
		return true
	}
	// The read was later than the refresh's start: bound it by now.
	since := account.Mono() - t.readAt
	return grew <= since+since/1000+int64(tickSlack)
}

// replaced handles a thread whose id names another task now: the main
// thread's, after an exec in another thread, or a reused tid read by name.
// The caller ends t and opens the id anew; the new task's entry continues
// the thread that called exec (see continueExec).
func (st *state) replaced(p *proc, t *thread) readStatus {
	if t.tid == p.pid {
		return readReplaced
	}
	return readGone
}

// ended is what is kept of a thread that went in this refresh, to find the
// one whose exec took the main thread's id.
type ended struct {
	runtime, wait, slices uint64
	readAt                int64
	total                 uint64
}

// continueExec finds, among the threads of p that went in this refresh,
// the one that called exec and took the main thread's id, now the entry
// t: its counters are where that thread's were, or further within the
// time since (sameTask). Its CPU was reported under its old id, so t's
// first Delta counts only what it used since. Where no thread fits (it
// was born and called exec between two refreshes), t is new, and all its
// time is its Delta.
func (st *state) continueExec(t *thread) {
	best := -1
	for i, e := range st.ended {
		old := thread{runtime: e.runtime, wait: e.wait, slices: e.slices, readAt: e.readAt}
		if st.sameTask(&old, procfs.Schedstat{RunTime: t.runtime, WaitTime: t.wait, Timeslices: t.slices}) &&
			(best < 0 || e.runtime > st.ended[best].runtime) {
			best = i
		}
	}
	if best >= 0 {
		t.base = st.ended[best].total
	}
}

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

// keep the cleanup from holding the Sampler.
func attachCleanup(s *Sampler) {
	if s.sys.st != nil {
		runtime.AddCleanup(s, func(st *state) { st.closeAll() }, s.sys.st)
	}
}
