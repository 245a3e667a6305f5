package sampler

import (
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

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
	ino       uint64 // pidfs inode of its pid, for reads by name (Engine.SameTask); 0 if unknown
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
		if t != nil && st.still(p, t, dst) {
			continue
		}
		if t != nil {
			// Read as gone while listed: the tid names a new thread.
			st.threadGone(p, t, dst, time.Now())
		}
		if t = st.openThread(p, tid, dst); t != nil {
			t.seen = st.gen
			p.tdirty = true
		}
	}
	for _, t := range p.threads {
		// The kernel's listing can leave out a thread alive throughout
		// when others exit while it runs (engine.threadsOf says how), so
		// a known thread is gone only if reading it says so.
		if t.seen != st.gen && (!st.present(p, t) || !st.still(p, t, dst)) {
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

// still reads the known thread t, unless readKnown read it in this
// refresh, and reports whether it is still there: then it is seen.
func (st *state) still(p *proc, t *thread, dst *Sample) bool {
	if t.read != st.gen {
		switch st.readThread(p, t, dst) {
		case readOK, readFailed:
		case readReplaced:
			p.replaced = true
			return false
		default:
			return false
		}
	}
	t.seen = st.gen
	return true
}

// present reports whether the task directory still has t's entry, for a
// thread the listing left out that readKnown read before it.
func (st *state) present(p *proc, t *thread) bool {
	if t.read != st.gen {
		return true // still reads it
	}
	var name [24]byte
	var stat unix.Stat_t
	err := unix.Fstatat(p.taskfd, string(strconv.AppendInt(name[:0], int64(t.tid), 10)), &stat, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil
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
		if !st.eng.SameTask(tid, true, &t.ino) {
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
		err = st.clocks.CheckStart(s.StartTime, st.offset)
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
// after the reads (Engine.SameTask): if its id names another task by then, what
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
	if r != readGone && !st.eng.SameTask(t.tid, true, &t.ino) {
		t.name, t.state, t.zombie, t.user, t.ker, t.total, t.creation, t.lastAlive =
			saved.name, saved.state, saved.zombie, saved.user, saved.ker, saved.total, saved.creation, saved.lastAlive
		dst.ExitedThreads, dst.Errors = dst.ExitedThreads[:nx], dst.Errors[:ne]
		return readGone
	}
	return r
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
