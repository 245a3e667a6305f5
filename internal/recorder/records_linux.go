package recorder

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/timeline"
)

type task struct {
	pid, tid   int
	name       string
	fork, exit uint64 // CLOCK_BOOTTIME, ns; 0: not seen
	exited     bool
	count      uint64 // sum of the READ records' task-clock counts, ns
	reads      int
	cum        []timeline.Sample
	sched      *procfs.File
	utime      uint64 // stat ticks last read
	stime      uint64
	file       *procfs.File
	top        bool
	final      *exitRecord // its taskstats exit record (exits), nil before
	fit        uint64      // its share of what the exit records leave to its process's exact total (fitTop), ns
	gone       bool        // no EXIT record, but gone from /proc at the end
	execFrom   int         // the id it had before it exec'd as another thread, 0 if none
	exitParent int         // its parent's pid as its EXIT record names it (parentFits)
	fromZombie bool        // its final times were read from the top process's zombie
	nextOpen   *task       // the next task of its process with its id and no exit record (proc.open)
	liveAt     int         // 1 + its index in Recorder.live; 0 once its EXIT record came
}

// unlive takes t out of the tasks with no EXIT record yet (a slice, not a
// set: a map insertion and deletion for each thread were the reader's most
// costly map operations after the lookups).
func (r *Recorder) unlive(t *task) {
	if t.liveAt == 0 {
		return
	}
	i, last := t.liveAt-1, r.live[len(r.live)-1]
	r.live[i], last.liveAt = last, t.liveAt
	r.live[len(r.live)-1] = nil
	r.live = r.live[:len(r.live)-1]
	t.liveAt = 0
}

type proc struct {
	pid, ppid int
	tasks     []*task
	// open holds, by thread id, the process's tasks with that id that have
	// no exit record yet, the first chained to the later ones by
	// nextOpen, in the order they began: matchExit's index, so that
	// matching an exit costs the same in a process of 10,000 threads as in
	// one of ten (pushChain says why a chain).
	open map[int]*task
	// earlier is the process that had the pid before this one within the
	// recording, nil if none (matchExit).
	earlier *proc
}

// add appends t to the process's tasks.
func (p *proc) add(t *task) {
	p.tasks = append(p.tasks, t)
	if t.final == nil {
		p.pushOpen(t.tid, t)
	}
}

// pushOpen puts t last among the open tasks with id tid.
func (p *proc) pushOpen(tid int, t *task) {
	if p.open == nil {
		p.open = map[int]*task{}
	}
	pushChain(p.open, tid, t, openLink)
}

// The recorder keeps two maps of chains by thread id, each element linked
// to the next by a field of its own: a process's open tasks (proc.open,
// by task.nextOpen) and the exit records waiting for their task
// (Recorder.waiting, by exitRecord.next). A chain, not a slice per id:
// an id has two elements only after a reuse or an exec, and a slice cost
// each thread an allocation.
func openLink(t *task) **task             { return &t.nextOpen }
func exitLink(e *exitRecord) **exitRecord { return &e.next }

// pushChain puts x last in the chain m[k].
func pushChain[T any](m map[int]*T, k int, x *T, link func(*T) **T) {
	*link(x) = nil
	last := m[k]
	if last == nil {
		m[k] = x
		return
	}
	for *link(last) != nil {
		last = *link(last)
	}
	*link(last) = x
}

// unlinkChain takes x, which follows prev in the chain m[k] (prev nil: x
// is first), out of it.
func unlinkChain[T any](m map[int]*T, k int, prev, x *T, link func(*T) **T) {
	next := *link(x)
	switch {
	case prev != nil:
		*link(prev) = next
	case next != nil:
		m[k] = next
	default:
		delete(m, k)
	}
	*link(x) = nil
}

// retid moves t, whose id becomes tid (an exec in a thread other than the
// main one), in the index of tasks without an exit record: after the old
// leader with that id, which exited first.
func (p *proc) retid(t *task, tid int) {
	var prev *task
	for o := p.open[t.tid]; o != nil; prev, o = o, o.nextOpen {
		if o == t {
			unlinkChain(p.open, t.tid, prev, o, openLink)
			break
		}
	}
	if t.final == nil {
		p.pushOpen(tid, t)
	}
}

// firstOpen returns the earliest task of the process with id tid and no
// exit record yet, nil if there is none.
func (p *proc) firstOpen(tid int) *task {
	o := p.open[tid]
	for o != nil && o.final != nil { // given a record elsewhere
		o = o.nextOpen
	}
	if o == nil {
		delete(p.open, tid)
	} else {
		p.open[tid] = o
	}
	return o
}

// give gives the exit record e to o, which firstOpen returned for tid.
func (p *proc) give(tid int, o *task, e *exitRecord) {
	o.final = e
	if o.nextOpen == nil {
		delete(p.open, tid)
	} else {
		p.open[tid] = o.nextOpen
	}
}

// drainAll reads every ring and applies, in time order, the records older
// than the start of the previous round: a task's records come through
// several CPUs' buffers (its FORK where its parent ran, its EXIT where it
// ran last), and a record stamped before that instant was written by now.
// With final set it applies them all.
func (r *Recorder) drainAll(final bool) {
	now := bootNow()
	if r.arena == nil {
		// Room for a round's records (at 50 ms, 5,000 threads of 100 µs
		// leave about 100 KB), kept from round to round: an arena
		// growing by append each round allocated 3.5 MB of fresh memory
		// for 5,000 threads, each page a fault on the CPUs the recorded
		// work runs on. Not every buffer's size: in a process whose
		// heap is reused that memory is cleared at once, megabytes a
		// niced reader took hundreds of ms to clear beside busy CPUs
		// (TestRecordSplit's samples). The smallest record is 48 bytes.
		room := min(len(r.rings)*r.ringBytes, 256<<10)
		r.arena, r.spare = make([]byte, 0, room), make([]byte, 0, room)
		r.pending = make([]pendingRecord, 0, room/48)
	}
	// In time order; records stamped alike in the order they were taken
	// (the arena's, as the records kept from the last round are moved in
	// their order to its start). The kept records are in order, and so,
	// nearly always, is what one buffer holds (a record is stamped just
	// before it is written to its CPU's buffer): runs merged, each sorted
	// only if it is not, rather than one sort of them all, which was 8% of
	// cputime's CPU time in a 60,000-thread run.
	runs := append(r.runs[:0], len(r.pending))
	for _, x := range r.rings {
		start := len(r.pending)
		x.drain(r.since, func(rec []byte) {
			off := len(r.arena)
			r.arena = append(r.arena, rec...)
			// Every record ends with its time (sample_id_all).
			at := binary.NativeEndian.Uint64(rec[len(rec)-8:])
			r.pending = append(r.pending, pendingRecord{at: at, off: off, end: len(r.arena)})
		})
		if run := r.pending[start:]; !slices.IsSortedFunc(run, pendingRecord.compare) {
			slices.SortFunc(run, pendingRecord.compare)
		}
		runs = append(runs, len(r.pending))
	}
	r.runs = runs
	r.pending, r.merged = mergeRuns(r.pending, r.merged, runs)
	n := len(r.pending)
	if !final {
		n, _ = slices.BinarySearchFunc(r.pending, r.safe+1, func(p pendingRecord, t uint64) int { return cmp.Compare(p.at, t) })
	}
	for _, p := range r.pending[:n] {
		r.handle(r.arena[p.off:p.end])
	}
	rest := r.pending[n:]
	// The records left (stamped within the safety margin: a fraction of a
	// round's) move to the spare arena, and the two change places. Both
	// keep their memory from round to round: an arena that grew instead
	// cost fresh pages (4.6 MB of them for 5,000 threads), each a page
	// fault on the CPUs the recorded work runs on.
	spare := r.spare[:0]
	for i := range rest {
		off := len(spare)
		spare = append(spare, r.arena[rest[i].off:rest[i].end]...)
		rest[i].off, rest[i].end = off, len(spare)
	}
	r.arena, r.spare = spare, r.arena[:0]
	r.pending = append(r.pending[:0], rest...)
	// A record can be written a while after it was stamped (its CPU
	// interrupted, or descheduled by the hypervisor): keep a margin.
	r.safe = now - min(now, uint64(safetyMargin))
}

// compare orders records by time, then by their place in the arena.
func (a pendingRecord) compare(b pendingRecord) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.off, b.off)
}

// mergeRuns merges the sorted runs of recs (runs holds the end of each)
// two by two until one is left, with scratch as the other buffer; it
// returns the merged records and the buffer left over.
func mergeRuns(recs, scratch []pendingRecord, runs []int) ([]pendingRecord, []pendingRecord) {
	for len(runs) > 1 {
		scratch = scratch[:0]
		next := runs[:0]
		start := 0
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				scratch = append(scratch, recs[start:runs[i]]...)
				next = append(next, len(scratch))
				break
			}
			a, b := recs[start:runs[i]], recs[runs[i]:runs[i+1]]
			for len(a) > 0 && len(b) > 0 {
				if b[0].compare(a[0]) < 0 {
					scratch, b = append(scratch, b[0]), b[1:]
				} else {
					scratch, a = append(scratch, a[0]), a[1:]
				}
			}
			scratch = append(append(scratch, a...), b...)
			start = runs[i+1]
			next = append(next, len(scratch))
		}
		runs = next
		recs, scratch = scratch, recs
	}
	return recs, scratch
}

// bootNow reads CLOCK_BOOTTIME. Raw: x/sys calls the kernel for it (not
// the vDSO), and a system call entered through the scheduler wakes the
// runtime's sysmon thread (see waiter).
func bootNow() uint64 {
	var ts unix.Timespec
	unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_BOOTTIME, uintptr(unsafe.Pointer(&ts)), 0)
	return uint64(ts.Nano())
}

// handle applies one record. Records of one task arrive through several
// CPUs' buffers, so not always in order: a task first seen by a sample or
// a READ is created then, and its FORK fills in the rest.
func (r *Recorder) handle(rec []byte) {
	u32 := func(off int) uint32 { return binary.NativeEndian.Uint32(rec[off:]) }
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(rec[off:]) }
	typ := u32(0)
	misc := binary.NativeEndian.Uint16(rec[4:])
	n := len(rec)
	switch {
	case typ == recordLostSamples && n >= 16:
		r.lost += u64(8)
	case typ == recordFork && n >= 32:
		pid, ppid, tid, ptid, at := int(u32(8)), int(u32(12)), int(u32(16)), int(u32(20)), u64(24)
		parent := r.tasks[ptid]
		// With system-wide events, ours if a task of the tree created it.
		if r.system && (parent == nil || parent.pid != ppid || parent.exited) {
			return
		}
		t := r.tasks[tid]
		name := ""
		if parent != nil {
			name = parent.name
		}
		// A task other records named first (its FORK came late, through
		// another CPU's buffer) is taken over, exited or not; a task that
		// had its own FORK is an earlier one whose id was reused.
		if t == nil || t.fork != 0 || t.top || t.pid != pid {
			t = &task{pid: pid, tid: tid, name: name}
			r.addTask(t, ppid)
		} else {
			if pid == tid {
				r.procs[pid].ppid = ppid
			}
			if t.name == "" {
				t.name = name
			}
			if t.final == nil && r.waiting[tid] != nil { // its parent known now
				r.takeWaiting(t, r.procs[pid])
			}
		}
		t.fork = at
	case typ == recordComm && n >= 32:
		pid, tid := int(u32(8)), int(u32(12))
		if misc&miscCommExec != 0 && pid == tid {
			r.execTakesLeader(pid)
		}
		t := r.lookup(pid, tid)
		if t == nil {
			return
		}
		end := n - 16 // the sample_id: pid, tid, time
		name := rec[16:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		t.name = string(name)
	case typ == recordExit && n >= 32:
		t := r.lookup(int(u32(8)), int(u32(16)))
		if t == nil {
			return
		}
		t.exit, t.exited, t.exitParent = u64(24), true, int(u32(12))
		r.unlive(t)
		r.closeFile(t)
		if t.final == nil && r.waiting[t.tid] != nil { // its parent at the exit known now
			r.takeWaiting(t, r.procs[t.pid])
		}
	case typ == recordRead && n >= 24:
		t := r.lookup(int(u32(8)), int(u32(12)))
		if t == nil {
			return
		}
		t.reads++
		if !t.top { // its final times come from its zombie's schedstat
			t.count += u64(16)
		}
	}
}

// miscCommExec marks a COMM record written by an exec
// (PERF_RECORD_MISC_COMM_EXEC).
const miscCommExec = 1 << 13

// execTakesLeader handles an exec in process pid: where the main thread
// has exited (its EXIT applied) and one other thread is still live, that
// thread called exec, and the kernel gave it the process's id (de_thread:
// the other threads and the old main thread exit first). It continues as
// the main thread, with its own creation and count so far; no EXIT record
// ever comes under its old id.
func (r *Recorder) execTakesLeader(pid int) {
	old := r.tasks[pid]
	p := r.procs[pid]
	if old == nil || old.pid != pid || !old.exited || p == nil {
		return
	}
	var x *task
	for _, t := range p.tasks {
		if !t.exited && t.tid != pid {
			if x != nil {
				return // which one exec'd is not known
			}
			x = t
		}
	}
	if x == nil {
		return
	}
	if r.tasks[x.tid] == x {
		delete(r.tasks, x.tid)
	}
	r.closeFile(x) // bound to the old id
	p.retid(x, pid)
	x.execFrom, x.tid = x.tid, pid
	r.tasks[pid] = x
	if x.final == nil && r.waiting[pid] != nil {
		r.takeWaiting(x, p)
	}
}

// lookup returns the task a record names: with system-wide events only a
// live task of the tree (nil for another), else the latest task tid,
// created if no record named it yet. A system-wide event writes a task's
// EXIT record last, so a record naming an exited task's ids is of a
// process outside the tree that took its pid since.
func (r *Recorder) lookup(pid, tid int) *task {
	if r.system {
		if t := r.tasks[tid]; t != nil && t.pid == pid && !t.exited {
			return t
		}
		return nil
	}
	return r.task(pid, tid)
}

// task returns the latest task tid, created if no record named it yet.
func (r *Recorder) task(pid, tid int) *task {
	if t := r.tasks[tid]; t != nil && t.pid == pid {
		return t
	}
	t := &task{pid: pid, tid: tid}
	if p := r.procs[pid]; p != nil && len(p.tasks) > 0 {
		t.name = p.tasks[0].name
	}
	r.addTask(t, 0)
	return t
}

func (r *Recorder) closeFile(t *task) {
	if t.file != nil {
		t.file.Close()
		t.file = nil
		r.kept--
	}
	if t.sched != nil {
		t.sched.Close()
		t.sched = nil
		r.kept--
	}
}

// allTasks is every task recorded, those whose id was reused included.
func (r *Recorder) allTasks() func(func(*task) bool) {
	return func(yield func(*task) bool) {
		for _, p := range r.order {
			for _, t := range p.tasks {
				if !yield(t) {
					return
				}
			}
		}
	}
}
