package recorder

import (
	"slices"
	"time"
)

// pendingRecord is a record copied out of a ring buffer, waiting until no
// record from another CPU can still arrive before it.
type pendingRecord struct {
	at       uint64
	off, end int // in arena
}

// unmatchedFor is how long an exit record waits for a perf record to name
// its task (records are applied up to safetyMargin late) before it is
// taken for another process's and dropped.
const unmatchedFor = 2 * time.Second

// takeExits gives each exit record received to its task, keeping those of
// tasks no perf record named yet, and drops the ones kept too long
// (another process's: every exit on the machine is received).
func (r *Recorder) takeExits() {
	if r.exits == nil {
		return
	}
	r.taken = r.exits.take(r.taken)
	for _, e := range r.taken {
		r.takeExit(e)
	}
	clear(r.taken)
	old := time.Now().Add(-unmatchedFor)
	n := 0
	for _, tid := range r.waitOrder {
		w := r.waiting[tid]
		if w != nil && w.received.After(old) {
			break
		}
		if w != nil {
			unlinkChain(r.waiting, tid, nil, w, exitLink)
		}
		n++
	}
	r.waitOrder = r.waitOrder[n:]
}

// takeExit gives e to its task, or keeps it until a perf record names it.
func (r *Recorder) takeExit(e *exitRecord) {
	if r.matchExit(e) {
		return
	}
	if r.waiting == nil {
		r.waiting = map[int]*exitRecord{}
	}
	tid := int(e.PID)
	pushChain(r.waiting, tid, e, exitLink)
	r.waitOrder = append(r.waitOrder, tid)
}

// takeWaiting gives t, a task of process p, an exit record that arrived
// before a perf record named t, or before one told whose it is
// (parentFits).
func (r *Recorder) takeWaiting(t *task, p *proc) {
	var prev *exitRecord
	for e := r.waiting[t.tid]; e != nil; prev, e = e, e.next {
		if e.TGID != 0 && int(e.TGID) != t.pid || !r.parentFits(e, t, p) {
			continue
		}
		t.final = e
		unlinkChain(r.waiting, t.tid, prev, e, exitLink)
		return
	}
}

// waitingAll is every exit record still waiting for its task.
func (r *Recorder) waitingAll() []*exitRecord {
	var all []*exitRecord
	for _, w := range r.waiting {
		for ; w != nil; w = w.next {
			all = append(all, w)
		}
	}
	return all
}

// matchExit gives e to the earliest task with its ids and no record yet
// whose parent fits (parentFits).
//
// Exit records come in the order of the exits, and two tasks share ids
// only after the first has exited: a reused pid (the earlier process's
// tasks, which a reader that got no CPU for a while may have named along
// with the later one's, come first), a reused thread id within a process,
// or a thread that exec'd and took the main thread's id from the old main
// thread, which exits first.
func (r *Recorder) matchExit(e *exitRecord) bool {
	tid := int(e.PID)
	if p := r.procs[int(e.TGID)]; p != nil && e.TGID != 0 {
		var o *task
		var op *proc
		for ; p != nil; p = p.earlier {
			if x := p.firstOpen(tid); x != nil && r.parentFits(e, x, p) {
				o, op = x, p
			}
		}
		if o == nil {
			return false
		}
		op.give(tid, o, e)
		return true
	}
	t := r.tasks[tid]
	if t == nil || t.final != nil || e.TGID != 0 && t.pid != int(e.TGID) || !r.parentFits(e, t, r.procs[t.pid]) {
		return false
	}
	t.final = e
	return true
}

// parentFits says whether the exit record e, which has the ids of t (a
// task of process p), is t's by the parent it names. Every exit on the
// machine has a record, and one of a process outside the tree that took a
// pid the tree had used (freed, or steered back) has the same ids; its
// parent, outside the tree, tells it apart. The record names the parent at
// the exit: the process that created t's, or, for an orphan, the one the
// kernel handed it to, which t's perf EXIT record names as well. While
// neither agrees it is not t's, or not yet known to be: the record waits,
// and t's EXIT, when it is applied, takes it if it fits then. The top
// process's id is not reused while it is recorded (its zombie holds it).
func (r *Recorder) parentFits(e *exitRecord, t *task, p *proc) bool {
	if t.pid == r.pid {
		return true
	}
	parent := int(e.PPID)
	if p != nil && p.ppid != 0 && p.ppid != p.pid && parent == p.ppid {
		return true
	}
	// Kernels before 5.7 wrote the exiting task's own process id as the
	// EXIT record's parent: the record says nothing then.
	return t.exited && (parent == t.exitParent || t.exitParent == t.pid)
}

// awaitExits takes, at the end, the exit records of the tasks seen to
// exit. The kernel queues a task's record (taskstats_exit) before it
// writes its perf EXIT record, so each is on its way; the wait ends when
// all are in, or when none came for a while after the kernel said it
// dropped some (or receiving failed), or after a few seconds at most.
func (r *Recorder) awaitExits() {
	if r.exits == nil {
		return
	}
	waitStart := time.Now()
	deadline := waitStart.Add(3 * time.Second)
	var missing []*task
	for t := range r.allTasks() {
		if t.exited && !t.top && t.final == nil {
			missing = append(missing, t)
		}
	}
	// The kernel queued each record before its EXIT: a drain finds them,
	// unless it said it dropped some (or receiving failed). A round that
	// brought none waits a little before the next.
	for first := true; ; first = false {
		r.exits.drain()
		r.takeExits()
		n := len(missing)
		missing = slices.DeleteFunc(missing, func(t *task) bool { return t.final != nil })
		if len(missing) == 0 || !time.Now().Before(deadline) {
			return
		}
		if dropped, err := r.exits.state(); (dropped > 0 || err != nil) && time.Since(waitStart) > 200*time.Millisecond {
			return
		}
		if !first && len(missing) == n {
			time.Sleep(time.Millisecond)
		}
	}
}
