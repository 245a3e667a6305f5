package engine

import (
	"container/list"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
)

// Without a pidfd to wake the exit watcher (kernels before 5.3, thread
// handles before 6.9, a seccomp filter that forbids pidfd_open), one poller
// goroutine looks for the exits of every such handle's task; never one
// goroutine or timer per handle or per waiter. It runs only while it has
// something to watch.
//
// Handles of one task share one look: they are grouped by (kind, id, start
// tick), and only the oldest member of a group is read (its kept-open stat
// file, or its pidfd). Every member was alive, checked under the poller's
// lock, when it joined, and so was every older member when it joined, so
// while the oldest member's task runs, every member's task is that one task
// (an id names one task at a time). When the oldest is found exited, each
// member is read for itself: a task that reused the id within the same
// tick is not taken for the one that exited.
//
// The pace: pollMin after an exit or when the poller starts, doubling while
// nothing exits up to pollMax, so an exit is seen within pollMax (plus one
// sweep); and never more often than pollBudget sweeps' worth of CPU time, so
// that the poller uses at most 1/pollBudget of a CPU however many tasks it
// watches (a few µs per distinct task at each sweep: a pread and parse of its
// stat file). The budget counts the CPU the sweep used (its thread's CPU
// clock), not the wall time it took: on a busy machine a sweep waits for a
// CPU far longer than it runs, and pacing on wall time stretched the sweeps
// to seconds exactly when other work made them wait (5.7 s under a parallel
// test suite, for 1,000 tasks).
const (
	pollMin    = 10 * time.Millisecond
	pollMax    = 250 * time.Millisecond
	pollBudget = 100
)

// pollKey is what handles of one task have in common.
type pollKey struct {
	id      int    // tid; for a process, its pid
	start   uint64 // start time, USER_HZ ticks since boot
	process bool   // a process handle: exited only when all its threads have
}

// pollGroup is the handles of one task, oldest first.
type pollGroup struct {
	key     pollKey
	members list.List // of exitObserver
}

// pollEntry is where a handle is in the poller; set and read under the
// poller's lock.
type pollEntry struct {
	group *pollGroup
	elem  *list.Element
}

type exitPoller struct {
	mu      sync.Mutex
	groups  map[pollKey]*pollGroup
	n       int  // handles watched
	running bool // the goroutine runs
}

var poller = exitPoller{groups: make(map[pollKey]*pollGroup)}

// watch adds o's task to the poller's watch. The caller holds o's lock for
// writing, or o is not yet shared. A task found already exited is not
// added: its exit is recorded at once, from another goroutine (the caller
// holds the lock that recording needs).
func (p *exitPoller) watch(o exitObserver) {
	h := o.base()
	key := pollKey{h.tid, h.start, h.process}
	p.mu.Lock()
	// Read under the poller's lock: see the ordering argument above.
	if st, err := h.state(); err == nil && st != kernel.TaskRunning {
		p.mu.Unlock()
		go o.exited(foundExited(h.pid, h.tid))
		return
	}
	defer p.mu.Unlock()
	g := p.groups[key]
	if g == nil {
		g = &pollGroup{key: key}
		p.groups[key] = g
	}
	h.polled = pollEntry{g, g.members.PushBack(o)}
	p.n++
	if !p.running {
		p.running = true
		go p.run()
	}
}

// unwatch removes h, if the poller has it.
func (p *exitPoller) unwatch(h *handleSys) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remove(h)
}

// remove takes h out of its group; p.mu is held.
func (p *exitPoller) remove(h *handleSys) bool {
	e := h.polled
	if e.group == nil {
		return false
	}
	e.group.members.Remove(e.elem)
	if e.group.members.Len() == 0 && p.groups[e.group.key] == e.group {
		delete(p.groups, e.group.key)
	}
	h.polled = pollEntry{}
	p.n--
	return true
}

// watching is how many handles the poller watches, and whether its
// goroutine runs.
func (p *exitPoller) watching() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.running
}

func (p *exitPoller) run() {
	interval := pollMin
	var reps []*pollGroup
	for {
		time.Sleep(interval)
		p.mu.Lock()
		if p.n == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		reps = reps[:0]
		for _, g := range p.groups {
			reps = append(reps, g)
		}
		p.mu.Unlock()

		runtime.LockOSThread() // so that the thread's CPU clock is the sweep's
		began := threadCPU()
		exits := false
		var exitWork time.Duration
		for _, g := range reps {
			p.mu.Lock()
			var oldest exitObserver
			if front := g.members.Front(); front != nil {
				oldest = front.Value.(exitObserver)
			}
			p.mu.Unlock()
			if oldest == nil {
				continue
			}
			if st, ok := oldest.base().pollState(); ok && st != kernel.TaskRunning {
				e := threadCPU()
				p.exitGroup(g)
				exitWork += threadCPU() - e
				exits = true
			}
		}
		clear(reps) // hold no group while sleeping
		// The budget paces the looking, not the exits' reporting: reading
		// and recording each member of an exited group is done once per
		// exit, however often the poller looks. Counted in, the work for
		// many handles of a few exited tasks would put the next sweep
		// seconds off, and a task still finishing its exit at that sweep
		// would be seen exited that late.
		cost := max(threadCPU()-began-exitWork, 0)
		runtime.UnlockOSThread()

		if exits {
			interval = pollMin
		} else {
			interval = min(2*interval, pollMax)
		}
		interval = max(interval, pollBudget*cost)
	}
}

// exitGroup reads each member of g whose oldest task was seen exited, and
// reports the exits of those whose task has exited.
func (p *exitPoller) exitGroup(g *pollGroup) {
	p.mu.Lock()
	members := make([]exitObserver, 0, g.members.Len())
	for e := g.members.Front(); e != nil; e = e.Next() {
		members = append(members, e.Value.(exitObserver))
	}
	p.mu.Unlock()
	var at exitAt // dated once for the task, when first needed
	for _, o := range members {
		h := o.base()
		if st, ok := h.pollState(); !ok || st == kernel.TaskRunning {
			continue
		}
		p.mu.Lock()
		mine := h.polled.group == g && p.remove(h)
		p.mu.Unlock()
		if !mine {
			continue // closed meanwhile
		}
		if at.at.IsZero() {
			at = foundExited(h.pid, h.tid)
		}
		o.exited(at)
	}
}

// pollState is the poller's read of h's task: ok is false if h is closed or
// the read failed (the poller tries again next time).
func (h *handleSys) pollState() (kernel.TaskState, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return 0, false
	}
	if _, ok := h.exit.final(); ok {
		return kernel.TaskExited, true // a query saw it first
	}
	st, err := h.state()
	return st, err == nil
}

// threadCPU is the calling thread's CPU time; 0 if the clock cannot be read
// (it always can on Linux), which leaves the pace to pollMin and pollMax.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
