package recorder

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/timeline"
	"golang.org/x/sys/unix"
)

// Why perf_event and not ptrace (measured on the 2-CPU test VM, Linux
// 6.18, by TestOverhead):
//
//   - perf_event: no task ever stops. Its costs are the inherited counters'
//     allocation at each creation (one per CPU), their switching at context
//     switches, and the records. At 1,000 thread creations/s the workload
//     ran 1.02x its plain wall time.
//   - ptrace with TRACECLONE|TRACEEXIT stops the creating thread at each
//     clone, the new thread at its first instruction and every thread at
//     its exit: tracer round trips for every thread. strace -f stopping at
//     clones and exits (the closest stand-in) ran the same workload at
//     3.5x. Every signal also becomes a stop the tracer must pass on (Go
//     programs get SIGURG many times a second), and CMD could no longer be
//     debugged or traced, since a task has one tracer.
//
// How exact perf's count is (the source without taskstats): a task's
// count is the time its counters were scheduled in, from the end of each
// switch to it until the exit hook in do_exit, by perf's clock
// (local_clock); the scheduler's runtime (which wait4, schedstat and the
// CPU clocks sum) runs from the start of each switch, by the runqueue's
// task clock, which leaves out interrupt time and, in a guest, the time
// the host stole from the vCPU. Quiet and without steal, 100-ms burners
// came within 0.15 ms of their own clocks; with a busy host, 2-ms threads
// were 0.4 ms below to 7 ms above. The exit records of taskstats carry
// the scheduler's own figure; they need CAP_NET_ADMIN (exitSource).
//
// The context swap (two clone tasks' counter contexts exchanged at a
// switch between them, and with inherit_stat their counts swapped back,
// paired by list position) is turned off where the kernel allows it
// (Linux 6.12: PERF_SAMPLE_READ with inherit sets nr_no_switch_fast).
// With another perf user's counters in the contexts the positions no
// longer pair like with like: perf stat beside the recording, or a nested
// one, left 56-76 of 300 threads off by up to 2 ms each way. Without the
// swap the original counters also stay on the top process's main thread.

// pollInterval bounds how long records wait in a ring buffer; the
// watermark wakes the reader earlier when a buffer fills.
const pollInterval = 20 * time.Millisecond

// safetyMargin is how long after a round's start a record stamped before it
// may still be committed to its buffer, for ordering records across CPUs.
const safetyMargin = 50 * time.Millisecond

// ringPages is the size of each ring buffer the recording asks for, in
// pages: 512 KiB, two per CPU. Unprivileged, the kernel allows
// perf_event_mlock_kb (516 KiB) per CPU plus RLIMIT_MEMLOCK; where that is
// less, every buffer is halved until they all fit (openRings).
var ringPages = 128 // a variable for the tests

// systemPages is the size of each system-wide ring buffer (root: no mlock
// allowance to keep under), in pages: 8 MiB in all, at most 4 MiB and at
// least ringPages each. At the lowest priority the reader may fall behind
// a burst of creations for as long as the work keeps the CPUs busy; each
// creation and exit takes about 150 bytes.
func systemPages(cpus int) int {
	if ringPages != 128 {
		return ringPages // a test's
	}
	pages := 1
	for pages*2*os.Getpagesize()*max(cpus, 1) <= 8<<20 && pages*2*os.Getpagesize() <= 4<<20 {
		pages *= 2
	}
	return max(pages, ringPages)
}

// lowPriority gives the calling thread the lowest nice value (19): it
// runs when the CPUs have nothing better to do, or its share of them. The
// caller locks its goroutine to the thread and never unlocks it, so that
// the Go runtime ends the thread with the goroutine rather than give it,
// still niced, to other goroutines.
func lowPriority() {
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}

// holdDrains, set by a test, holds the reader before each drain until it
// is closed: the kernel's buffers fill meanwhile.
var holdDrains chan struct{}

// maxKeptFiles caps the stat files kept open for running threads; past it
// a thread's stat is opened for each read.
const maxKeptFiles = 2048

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
	gone       bool        // no EXIT record, but gone from /proc at the end
	execFrom   int         // the id it had before it exec'd as another thread, 0 if none
	fromZombie bool        // its final times were read from the top process's zombie
}

type proc struct {
	pid, ppid int
	tasks     []*task
}

// Recorder is a recording in progress: started by Start, ended by Stop.
type Recorder struct {
	pid   int
	start time.Time
	since uint64  // CLOCK_BOOTTIME at the start, ns
	rings []*ring // counts and events of each online CPU
	// noSwitchFast: the counters were opened with the context swap off
	// (Linux 6.12 on); ringBytes is each ring buffer's size.
	noSwitchFast bool
	ringBytes    int
	// system: the events watch every task on the machine (pid -1), and
	// the tree is picked out of their records by who created whom.
	system bool
	// exits is the taskstats source of final times, nil where the
	// recording counts with perf (exitsErr says why).
	exits    *exitSource
	exitsErr error
	// waiting holds, by thread id, the exit records of tasks no perf
	// record named yet (addTask takes them), and waitOrder the ids in
	// order of arrival, to drop them after unmatchedFor.
	waiting   map[int][]*exitRecord
	waitOrder []int
	taken     []*exitRecord // takeExits' buffer
	// steal0 is the machine's steal time at the start (/proc/stat), and
	// offset0 the wall clock's offset from CLOCK_BOOTTIME.
	steal0  uint64
	offset0 int64
	grid    tickGrid
	stop    chan struct{}
	samples bool // Options.Samples
	wake    int  // an eventfd in the reading goroutine's poll set, -1 if none
	done    chan struct{}
	stopped bool

	// Owned by the reading goroutine until done is closed.
	tasks    map[int]*task      // by tid: the latest task with that id
	live     map[*task]struct{} // tasks with no EXIT record yet
	procs    map[int]*proc      // by pid
	order    []*proc            // in order of appearance
	lost     uint64
	kept     int
	buf      []byte
	lastStat time.Time
	pending  []pendingRecord
	arena    []byte
	spare    []byte // the arena's other half (drainAll)
	safe     uint64 // CLOCK_BOOTTIME before the previous round's reads
}

// pendingRecord is a record copied out of a ring buffer, waiting until no
// record from another CPU can still arrive before it.
type pendingRecord struct {
	at       uint64
	off, end int // in arena
}

// Start starts cmd with the counters open on it before CMD's first
// instruction, and returns once CMD runs. cmd's process first runs the
// start-up stub (stub_linux.go), which waits on a pipe while the counters
// are opened on it and then execs CMD; no task stops, so whenever cputime
// dies CMD is never left stopped or killed: before the counters are open
// it does not run at all (the stub exits 125), after that it runs on,
// unrecorded. If recording is impossible Start reaps the stub, which has
// not run CMD, and returns an error wrapping ErrNotSupported; cmd cannot
// be started again, but a new Cmd for the same program can. An error
// starting CMD itself is returned as Cmd.Start returns it: cmd.Err (not
// found) before anything starts, or the exec's error as a *fs.PathError
// ("fork/exec PATH"), once the stub has been reaped.
func Start(cmd *exec.Cmd, opts ...Options) (*Recorder, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if cmd.Err != nil || cmd.Process != nil {
		return nil, cmd.Start() // the error Cmd.Start gives
	}
	if err := privileged(cmd.Path); err != nil {
		return nil, err
	}
	// Before CMD starts, so that no exit of the tree is missed.
	exits, exitsErr := openExits()
	closeExits := func() {
		if exits != nil {
			exits.close()
		}
	}
	start, since := time.Now(), bootNow()
	held, err := startHeld(cmd)
	if err != nil {
		closeExits()
		return nil, err
	}
	pid := cmd.Process.Pid
	r := &Recorder{pid: pid, start: start, since: since, stop: make(chan struct{}), done: make(chan struct{}),
		tasks: map[int]*task{}, procs: map[int]*proc{}, exits: exits, exitsErr: exitsErr,
		steal0: stealTicks(), offset0: account.BootOffset(), grid: readTickGrid(), wake: -1, samples: o.Samples}
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		r.wake = fd
	}
	if err := r.openRings(pid); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %v (perf_event_paranoid must be 2 or less: /proc/sys/kernel/perf_event_paranoid)", ErrNotSupported, err)
		}
		closeExits()
		held.abort()
		r.closeWake()
		return nil, err
	}
	if beforeRelease != nil {
		beforeRelease(pid)
	}
	if err := held.release(); err != nil {
		for _, x := range r.rings {
			x.close()
		}
		closeExits()
		r.closeWake()
		return nil, err
	}
	name, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	top := &task{pid: pid, tid: pid, name: string(bytes.TrimSuffix(name, []byte("\n"))), top: true}
	r.addTask(top, 0)
	go r.loop()
	return r, nil
}

// beforeRelease, when set (tests), is called with the stub's pid once the
// counters are open, before the stub is let go.
var beforeRelease func(pid int)

// privileged refuses a program that gains privilege at exec (set-user-ID,
// set-group-ID, file capabilities): the kernel detaches the counters of a
// task whose exec makes it undumpable, writing its EXIT and READ records
// then, so such a CMD would be recorded as exiting at its exec. Run runs
// it unrecorded instead. A descendant that execs such a program is
// recorded that way: exiting at that exec, with its times up to it.
func privileged(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // cmd.Start reports it
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		return fmt.Errorf("%w: %s is set-user-ID or set-group-ID, and the kernel stops counting a task at such an exec", ErrNotSupported, path)
	}
	if _, err := unix.Getxattr(path, "security.capability", nil); err == nil {
		return fmt.Errorf("%w: %s has file capabilities, and the kernel stops counting a task at such an exec", ErrNotSupported, path)
	}
	return nil
}

// openRings opens the counts and events counters of every online CPU on
// pid, each with a ring buffer, all of the same size: the largest, from
// ringPages down, that the mlock allowance takes for all of them.
func (r *Recorder) openRings(pid int) error {
	if r.exits != nil && !perTaskOnly {
		// With taskstats, the records of creation, names and exit can
		// come from one event per CPU watching every task on the machine
		// (pid -1; root, CAP_PERFMON), the tree picked out by who
		// created whom: nothing is added to each task the tree creates,
		// where an event per CPU inherited by every task costs each
		// creation and exit (a loop of /bin/true ran 1.22x its bare wall
		// time so, 1.06x under perf stat's one counter per task).
		r.system = true
		if err := r.openAll(-1); err == nil {
			return nil
		}
		r.system = false
	}
	return r.openAll(pid)
}

// perTaskOnly makes the recordings use events inherited by the tree's
// tasks even where the system-wide ones would do (tests).
var perTaskOnly bool

// openAll opens r.kinds() on every online CPU for pid (-1: every task).
func (r *Recorder) openAll(pid int) error {
	cpus := onlineCPUs(runtime.NumCPU())
	r.noSwitchFast = true
	pages := ringPages
	if pid == -1 {
		pages = systemPages(len(cpus))
	}
	for ; ; pages /= 2 {
		var rings []*ring
		var err error
		for _, cpu := range cpus {
			for _, kind := range r.kinds() {
				var x *ring
				x, err = openRing(pid, cpu, pages, kind, r.noSwitchFast)
				if err != nil && kind == ringCounts && r.noSwitchFast && errors.Is(err, unix.EINVAL) && len(rings) == 0 {
					// Before Linux 6.12, inherit with PERF_SAMPLE_READ is
					// refused: the contexts are swapped (Stats.SwitchFast).
					r.noSwitchFast = false
					x, err = openRing(pid, cpu, pages, kind, false)
				}
				if err != nil {
					break
				}
				rings = append(rings, x)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			r.rings, r.ringBytes = rings, pages*os.Getpagesize()
			return nil
		}
		for _, x := range rings {
			x.close()
		}
		// A buffer smaller than asked for: the allowance is spent, so
		// halve them all rather than starve the last CPUs.
		if !errors.Is(err, errMlock) || pages <= 8 {
			return err
		}
	}
}

func (r *Recorder) addTask(t *task, ppid int) {
	r.tasks[t.tid] = t
	if t.final == nil && len(r.waiting[t.tid]) > 0 {
		r.takeWaiting(t)
	}
	if r.live == nil {
		r.live = map[*task]struct{}{}
	}
	r.live[t] = struct{}{}
	p := r.procs[t.pid]
	// A new leader for a pid whose process had its own leader (with its
	// FORK, or the top) that exited: the pid was reused.
	if p == nil || t.pid == t.tid && p.tasks[0].tid == t.pid && p.tasks[0].exited && (p.tasks[0].fork != 0 || p.tasks[0].top) {
		p = &proc{pid: t.pid, ppid: ppid}
		r.procs[t.pid] = p
		r.order = append(r.order, p)
	}
	p.tasks = append(p.tasks, t)
}

func (r *Recorder) loop() {
	defer close(r.done)
	if r.system {
		// The work the recording measures has the CPUs first: this
		// thread reads the records at the lowest priority, its buffers
		// (systemPages) holding what comes meanwhile.
		runtime.LockOSThread() // never unlocked: the thread, niced, ends with the goroutine
		lowPriority()
	}
	fds := make([]unix.PollFd, len(r.rings), len(r.rings)+1)
	for i, x := range r.rings {
		fds[i] = unix.PollFd{Fd: int32(x.fd), Events: unix.POLLIN}
	}
	if r.wake >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(r.wake), Events: unix.POLLIN})
	}
	for {
		select {
		case <-r.stop:
			r.drainAll(true)
			r.readStats(true)
			r.awaitExits()
			return
		default:
		}
		unix.Poll(fds, int(r.pollEvery()/time.Millisecond))
		if holdDrains != nil {
			<-holdDrains
		}
		r.drainAll(false)
		r.takeExits()
		if time.Since(r.lastStat) >= StatInterval {
			r.readStats(false)
		}
	}
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
		if len(w) > 0 && w[0].received.After(old) {
			break
		}
		if len(w) <= 1 {
			delete(r.waiting, tid)
		} else {
			r.waiting[tid] = w[1:]
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
		r.waiting = map[int][]*exitRecord{}
	}
	r.waiting[int(e.PID)] = append(r.waiting[int(e.PID)], e)
	r.waitOrder = append(r.waitOrder, int(e.PID))
}

// takeWaiting gives t an exit record that arrived before a perf record
// named t.
func (r *Recorder) takeWaiting(t *task) {
	w := r.waiting[t.tid]
	for i, e := range w {
		if e.TGID == 0 || int(e.TGID) == t.pid {
			t.final = e
			r.waiting[t.tid] = append(w[:i:i], w[i+1:]...)
			return
		}
	}
}

// waitingAll is every exit record still waiting for its task.
func (r *Recorder) waitingAll() []*exitRecord {
	var all []*exitRecord
	for _, w := range r.waiting {
		all = append(all, w...)
	}
	return all
}

// matchExit gives e to the latest task with its id, if that task has none.
//
// Within a process, the earliest task with that id still without one: two
// tasks of one process share an id only after the first has exited (a
// reused id, or a thread that exec'd and took the main thread's id from
// the old main thread, which exits first), and exit records come in the
// order of the exits.
func (r *Recorder) matchExit(e *exitRecord) bool {
	if p := r.procs[int(e.TGID)]; p != nil && e.TGID != 0 {
		for _, t := range p.tasks {
			if t.tid == int(e.PID) && t.final == nil && t.pid == int(e.TGID) {
				t.final = e
				return true
			}
		}
		return false
	}
	t := r.tasks[int(e.PID)]
	if t == nil || t.final != nil || e.TGID != 0 && t.pid != int(e.TGID) {
		return false
	}
	t.final = e
	return true
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
	for time.Now().Before(deadline) {
		r.takeExits()
		missing := false
		for t := range r.allTasks() {
			if t.exited && !t.top && t.final == nil {
				missing = true
				break
			}
		}
		if !missing {
			return
		}
		// The kernel queued each record before its EXIT: a little
		// patience, unless it said it dropped some (or receiving failed).
		r.exits.kick()
		time.Sleep(time.Millisecond)
		if dropped, err := r.exits.state(); (dropped > 0 || err != nil) && time.Since(waitStart) > 200*time.Millisecond {
			return
		}
	}
}

// drainAll reads every ring and applies, in time order, the records older
// than the start of the previous round: a task's records come through
// several CPUs' buffers (its FORK where its parent ran, its EXIT where it
// ran last), and a record stamped before that instant was written by now.
// With final set it applies them all.
func (r *Recorder) drainAll(final bool) {
	now := bootNow()
	for _, x := range r.rings {
		x.drain(r.since, func(rec []byte) {
			off := len(r.arena)
			r.arena = append(r.arena, rec...)
			// Every record ends with its time (sample_id_all).
			at := binary.NativeEndian.Uint64(rec[len(rec)-8:])
			r.pending = append(r.pending, pendingRecord{at: at, off: off, end: len(r.arena)})
		})
	}
	slices.SortStableFunc(r.pending, func(a, b pendingRecord) int { return cmp.Compare(a.at, b.at) })
	n := len(r.pending)
	if !final {
		n, _ = slices.BinarySearchFunc(r.pending, r.safe+1, func(p pendingRecord, t uint64) int { return cmp.Compare(p.at, t) })
	}
	for _, p := range r.pending[:n] {
		r.handle(r.arena[p.off:p.end])
	}
	rest := r.pending[n:]
	// The records left stay where they are in the arena until most of it
	// is records already applied; then they move to the spare arena, and
	// the two change places (no copy of every record every round).
	live := 0
	for _, p := range rest {
		live += p.end - p.off
	}
	if len(rest) == 0 {
		r.arena = r.arena[:0]
	} else if len(r.arena) > 64<<10 && len(r.arena) > 4*live {
		spare := r.spare[:0]
		for i := range rest {
			off := len(spare)
			spare = append(spare, r.arena[rest[i].off:rest[i].end]...)
			rest[i].off, rest[i].end = off, len(spare)
		}
		r.arena, r.spare = spare, r.arena[:0]
	}
	r.pending = append(r.pending[:0], rest...)
	// A record can be written a while after it was stamped (its CPU
	// interrupted, or descheduled by the hypervisor): keep a margin.
	r.safe = now - min(now, uint64(safetyMargin))
}

func bootNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
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
	case typ == recordLost && n >= 24:
		r.lost += u64(16)
	case typ == recordLostSamples && n >= 16:
		r.lost += u64(8)
	case typ == recordFork && n >= 32:
		pid, ppid, tid, ptid, at := int(u32(8)), int(u32(12)), int(u32(16)), int(u32(20)), u64(24)
		if r.system {
			// Ours if a task of the tree created it.
			if c := r.tasks[ptid]; c == nil || c.pid != ppid || c.exited {
				return
			}
		}
		t := r.tasks[tid]
		name := ""
		if parent := r.tasks[ptid]; parent != nil {
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
		t.exit, t.exited = u64(24), true
		delete(r.live, t)
		r.closeFile(t)
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
	x.execFrom, x.tid = x.tid, pid
	r.tasks[pid] = x
	if x.final == nil && len(r.waiting[pid]) > 0 {
		r.takeWaiting(x)
	}
}

// lookup returns the task a record names: with system-wide events only a
// task of the tree (nil for another), else the latest task tid, created if
// no record named it yet.
func (r *Recorder) lookup(pid, tid int) *task {
	if r.system {
		if t := r.tasks[tid]; t != nil && t.pid == pid {
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

// readStats reads the stat of every thread not yet seen to exit: the tick
// evidence for its split. At the end (final) the threads still running
// (descendants that outlived the top process) get their schedstat read
// too, as their times so far.
func (r *Recorder) readStats(final bool) {
	r.lastStat = time.Now()
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	for t := range r.live {
		dir := "/proc/" + strconv.Itoa(t.pid) + "/task/" + strconv.Itoa(t.tid) + "/"
		var st procfs.Stat
		var err error
		if t.file == nil && r.kept < maxKeptFiles {
			if t.file, err = procfs.OpenFile(dir + "stat"); err == nil {
				r.kept++
				if t.sched, err = procfs.OpenFile(dir + "schedstat"); err == nil {
					r.kept++
				}
			}
		}
		if t.file != nil {
			var k int
			if k, err = t.file.ReadAt0(r.buf); err == nil {
				st, err = procfs.ParseStat(r.buf[:k])
			}
		} else {
			st, err = readStatFile(dir+"stat", r.buf)
		}
		if err != nil {
			// Exited meanwhile: its EXIT record is on its way, or, at
			// the end, was lost.
			t.gone = final
			continue
		}
		if st.UTime >= t.utime && st.STime >= t.stime {
			t.utime, t.stime = st.UTime, st.STime
		}
		var b []byte
		if t.sched != nil {
			var k int
			if k, err = t.sched.ReadAt0(r.buf); err == nil {
				b = r.buf[:k]
			}
		} else {
			b, err = procfs.ReadFileInto(dir+"schedstat", r.buf[:0])
		}
		if err != nil {
			continue
		}
		s, err := procfs.ParseSchedstat(b)
		if err != nil {
			continue
		}
		if n := len(t.cum); n == 0 || s.RunTime > uint64(t.cum[n-1].CPU) {
			t.cum = append(t.cum, timeline.Sample{At: time.Now(), CPU: time.Duration(s.RunTime)})
		}
		if final && !t.top {
			t.count = s.RunTime // still running: its times so far
		}
	}
}

func readStatFile(path string, buf []byte) (procfs.Stat, error) {
	b, err := procfs.ReadFileInto(path, buf[:0])
	if err != nil {
		return procfs.Stat{}, err
	}
	return procfs.ParseStat(b)
}

// Stop ends the recording and returns it. Call it once the top process has
// exited and before it is reaped (after Wait on its pidfd, before
// Cmd.Wait): its main thread's final times are read from its zombie.
// Descendants still running are recorded as running, with their times so
// far.
func (r *Recorder) Stop() (*timeline.Recording, Stats, error) {
	if r.stopped {
		return nil, Stats{}, errors.New("recorder: Stop called twice")
	}
	r.stopped = true
	// The top process's main thread: its final stat and schedstat, from
	// its zombie, read into locals while the recording goroutine still
	// runs (it owns r.tasks until done), and stored once it has stopped, so
	// that no periodic sample overwrites them.
	dir := "/proc/" + strconv.Itoa(r.pid) + "/task/" + strconv.Itoa(r.pid) + "/"
	buf := make([]byte, 4096)
	var topErr error
	var topStat procfs.Stat
	var topSched procfs.Schedstat
	if topStat, topErr = readStatFile(dir+"stat", buf); topErr == nil {
		var b []byte
		if b, topErr = procfs.ReadFileInto(dir+"schedstat", buf[:0]); topErr == nil {
			topSched, topErr = procfs.ParseSchedstat(b)
		}
	}
	// The process's exact total, its exited threads' final runtimes
	// included (the process CPU clock of its zombie): what its threads'
	// final times must add up to.
	topTotal, _ := processCPU(r.pid)
	close(r.stop)
	r.wakeLoop()
	<-r.done
	if top := r.tasks[r.pid]; top != nil && topErr == nil {
		// The process's main thread now: CMD's, or a thread that exec'd.
		top.utime, top.stime, top.count, top.fromZombie = topStat.UTime, topStat.STime, topSched.RunTime, true
	}
	end := time.Now()
	if r.exits != nil {
		r.exits.close()
	} else {
		r.settleOriginals()
	}
	for _, x := range r.rings {
		x.close()
	}
	r.closeWake()
	for t := range r.live {
		r.closeFile(t)
	}
	if topErr != nil {
		return nil, Stats{}, fmt.Errorf("reading the final times of process %d: %w", r.pid, topErr)
	}
	stats := Stats{LostRecords: r.lost, CPUs: r.cpus(), SwitchFast: !r.noSwitchFast, BufferBytes: r.ringBytes,
		Source: "perf", SystemWide: r.system, ClockStep: time.Duration(account.BootOffset() - r.offset0)}
	if r.exits != nil {
		stats.Source = "taskstats"
		stats.ExitsDropped, _ = r.exits.state()
		for _, e := range r.waitingAll() {
			// A task of the tree no perf record named: its process and
			// its parent are the tree's (a pid reused outside the tree
			// during the recording has a parent outside it).
			if r.procs[int(e.TGID)] != nil && (r.procs[int(e.PPID)] != nil || int(e.TGID) == r.pid) {
				stats.ExitOnly++
			}
		}
	} else {
		stats.SourceNote = r.exitsErr.Error()
	}
	if steal := stealTicks(); steal > r.steal0 {
		stats.Steal = time.Duration(steal-r.steal0) * time.Second / time.Duration(clockTicks)
	}
	for _, x := range r.rings {
		stats.Corrupt += x.corrupt
	}
	tick := tick()
	stats.Tick = time.Duration(tick)
	rec := &timeline.Recording{Start: r.start, End: end}
	// The top process was created a few µs after r.start: closer than its
	// stat start time (a 10 ms tick), and on the same clock as the other
	// tasks' fork records.
	topCreation := r.start
	fitted := r.fitTop(topTotal, tick)
	for _, p := range r.order {
		tp := timeline.Process{ID: p.pid, Parent: p.ppid}
		if p.pid == r.pid {
			tp.Parent = 0
		}
		allExited := true
		for _, t := range p.tasks {
			th := timeline.Thread{ID: t.tid, Name: t.name, Samples: t.cum}
			switch {
			case t.top:
				th.Creation = topCreation
			case t.fork != 0:
				th.Creation = bootInstant(t.fork)
			default:
				stats.UnknownCreation++
			}
			if !t.exited && !t.top && (t.gone || t.final != nil) {
				// Exited, its EXIT record lost: the exit time is when
				// its exit record was received (late by its delivery),
				// or unknown.
				stats.ExitUnseen++
				if t.final != nil {
					th.Exit = t.final.received
				}
				if !r.haveFinal(t) {
					stats.Incomplete++
					th.Incomplete = true
				}
			} else if t.exited {
				th.Exit = bootInstant(t.exit)
				// The last look (the top process's zombie, read at the
				// end) can come after the exit: not a sample of its life.
				for len(th.Samples) > 0 && th.Samples[len(th.Samples)-1].At.After(th.Exit) {
					th.Samples = th.Samples[:len(th.Samples)-1]
				}
				if !t.fromZombie && !r.haveFinal(t) {
					stats.Incomplete++
					th.Incomplete = true
				}
			} else {
				allExited = false
				stats.Running++
			}
			ev := account.Evidence{UTime: t.utime, STime: t.stime, RTime: t.count}
			if t.final != nil && !t.fromZombie {
				// The kernel's own at the exit: sum_exec_runtime (as of
				// the last tick or switch) and the ticks of each mode,
				// in µs; the stretch after, fitted to the process's
				// exact total where it is known (fitTop), or to the
				// tree's later (FitTree).
				ev = account.Evidence{UTime: t.final.UTime, STime: t.final.STime, RTime: t.final.CPURunVirtualTotal + fitted[t]}
				th.Estimated = time.Duration(fitted[t])
				th.EstimateCap = time.Duration(r.stretchCap(t, tick))
			}
			u, k := account.Rule(ev)
			// Ticks seen only by the reads every StatInterval: a task
			// that lived between two has none (an exit record or the
			// zombie has the kernel's own, whatever they are).
			th.NoTicks = ev.UTime == 0 && ev.STime == 0 && ev.RTime > 0 && t.final == nil && !t.fromZombie
			th.User, th.Kernel = time.Duration(u), time.Duration(k)
			tp.User += th.User
			tp.Kernel += th.Kernel
			if th.Exit.After(tp.Exit) {
				tp.Exit = th.Exit
			}
			tp.Threads = append(tp.Threads, th)
		}
		if !allExited {
			tp.Exit = time.Time{}
		}
		leader := p.tasks[0]
		for _, t := range p.tasks {
			if t.tid == p.pid {
				leader = t
				if t.fork != 0 {
					tp.Creation = bootInstant(t.fork)
				}
				if t.top {
					tp.Creation = topCreation
				}
				break
			}
		}
		tp.Name = leader.name
		for _, t := range p.tasks {
			if t.tid == p.pid {
				tp.Name = t.name // the latest main thread's: after an exec by another thread, the new one's
			}
		}
		if tp.Creation.IsZero() || leader.tid != p.pid {
			tp.Creation = tp.Threads[0].Creation
		}
		slices.SortStableFunc(tp.Threads, func(a, b timeline.Thread) int { return a.Creation.Compare(b.Creation) })
		rec.Processes = append(rec.Processes, tp)
	}
	stats.Problems = problems(stats, r.pid)
	return rec, stats, nil
}

// Close releases what a recording holds if Stop was not called (an error
// path); it does not wait for the process.
func (r *Recorder) Close() error {
	if r == nil || r.stopped {
		return nil
	}
	r.stopped = true
	close(r.stop)
	r.wakeLoop()
	<-r.done
	if r.exits != nil {
		r.exits.close()
	}
	for _, x := range r.rings {
		x.close()
	}
	r.closeWake()
	for t := range r.live {
		r.closeFile(t)
	}
	return nil
}

// bootInstant converts a CLOCK_BOOTTIME reading to the wall-clock instant,
// with the process's one boot offset (account.BootOffset).
func bootInstant(ns uint64) time.Time {
	return time.Unix(0, int64(ns)+account.BootOffset())
}

// settleOriginals gives the original counters' count to the task that held
// them when it exited. The kernel swaps two tasks' counter contexts at a
// switch between them when they are clones of one another (a shortcut that
// keeps the counts exact: nothing is switched out or in); inherit_stat
// swaps the counts back, so each count stays with its task, but the
// original counters (the ones opened on the top process) can end on any
// task of the tree, and an original writes no READ record at its exit.
// Their count is each counter's total less every READ that came through
// its buffer. The holder is the one exited task with no READ record; if
// it is the top process's main thread (as without any swap), its times
// come from its zombie anyway. Tasks still running (descendants that
// outlive CMD) have their counts in the totals too: their schedstat, read
// a moment before, is taken out, which leaves the holder's figure off by
// what they ran in between (µs). Where the holder is ambiguous (several
// exited tasks without READ), nothing is assigned and they count as
// incomplete.
func (r *Recorder) settleOriginals() {
	var leftover uint64
	for _, x := range r.rings {
		if x.kind != ringCounts {
			continue
		}
		t, err := x.total()
		if err != nil || t < x.readSum {
			return
		}
		leftover += t - x.readSum
	}
	var holder *task
	var running uint64
	for t := range r.allTasks() {
		switch {
		case !t.exited:
			// Its count so far is in the totals: take out what its
			// schedstat said a moment ago (readStats, just before).
			running += t.count
			continue
		case t.reads > 0:
			continue
		case t.top && t == r.tasks[r.pid]:
			return // its times come from its zombie
		case holder != nil:
			return
		}
		holder = t
	}
	if holder != nil {
		holder.count = leftover - min(leftover, running)
		holder.reads = r.cpus()
	}
}

// haveFinal says whether the exited task t has its final count: its exit
// record, or every CPU's READ record.
func (r *Recorder) haveFinal(t *task) bool {
	return t.final != nil || t.reads >= r.cpus()
}

// pollEvery is how long the reading goroutine waits for a buffer to reach
// its watermark (a quarter full) before it reads anyway. With system-wide
// buffers (root), which hold a long burst, and no samples asked for, ten
// times pollInterval: each wakeup of a reader costs, in a virtual machine,
// the work it records too.
func (r *Recorder) pollEvery() time.Duration {
	if r.system && !r.samples {
		return 10 * pollInterval
	}
	return pollInterval
}

// wakeLoop ends the reading goroutine's wait in poll, so that a Stop does
// not wait out the poll interval.
func (r *Recorder) wakeLoop() {
	if r.wake >= 0 {
		var one [8]byte
		one[0] = 1
		unix.Write(r.wake, one[:])
	}
}

func (r *Recorder) closeWake() {
	if r.wake >= 0 {
		unix.Close(r.wake)
		r.wake = -1
	}
}

// kinds are the counters each CPU gets: with taskstats the events alone
// (the final times come from the exit records and the exact totals they
// are fitted to), without it the counts too. Each counter is inherited by
// every task the tree creates, so each costs every creation and exit.
func (r *Recorder) kinds() []ringKind {
	if r.exits != nil {
		return []ringKind{ringEvents}
	}
	return []ringKind{ringCounts, ringEvents}
}

// processCPU reads process pid's CPU clock (CPUCLOCK_SCHED): the exact
// runtime of all its threads, exited ones included; a zombie's is final.
func processCPU(pid int) (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(int32(^pid<<3|2), &ts); err != nil {
		return 0, err
	}
	return uint64(ts.Nano()), nil
}

// stretchCap bounds the stretch of the exited task t's life after its
// exit record's sum_exec_runtime (its last tick or switch): no more than
// the time from the last tick before its exit to its exit (each tick
// brings the running task's sum_exec_runtime up to date), nor than its
// life, nor than a tick.
func (r *Recorder) stretchCap(t *task, tick uint64) uint64 {
	c := min(tick, r.grid.sinceTick(t.exit))
	if t.fork != 0 && t.exit > t.fork {
		c = min(c, t.exit-t.fork)
	}
	return c
}

// fitTop fits the final times of the top process's exited threads to the
// process's exact total (topTotal, 0 if unknown). Each thread's exit record
// is exact up to its last tick or switch; what the records leave to the
// total is the stretches after them (each at most stretchCap) and the
// exits' last instants. It is shared out by waterFill: to one level, none
// beyond its cap, and what the caps cannot hold in equal shares. It
// returns each thread's share.
func (r *Recorder) fitTop(topTotal, tick uint64) map[*task]uint64 {
	var top *proc
	for _, p := range r.order {
		if p.pid == r.pid {
			top = p
			break
		}
	}
	if topTotal == 0 || top == nil || r.exits == nil {
		return nil
	}
	var fixed uint64
	var fit []*task
	caps := map[*task]uint64{}
	for _, t := range top.tasks {
		if t.final == nil || t.fromZombie {
			fixed += t.count
			continue
		}
		fixed += t.final.CPURunVirtualTotal
		caps[t] = r.stretchCap(t, tick)
		fit = append(fit, t)
	}
	if len(fit) == 0 || topTotal <= fixed {
		return nil
	}
	return waterFill(fit, caps, topTotal-fixed)
}

// waterFill shares budget among the tasks ts, each at most its want: the
// largest wants are cut to one level that makes them add up to budget;
// if all of them add up to less, each gets its want and an equal share of
// the rest.
func waterFill(ts []*task, want map[*task]uint64, budget uint64) map[*task]uint64 {
	out := make(map[*task]uint64, len(ts))
	var sum uint64
	for _, t := range ts {
		sum += want[t]
	}
	if sum <= budget {
		extra := (budget - sum) / uint64(len(ts))
		for _, t := range ts {
			out[t] = want[t] + extra
		}
		return out
	}
	return level(ts, want, budget)
}

// tickGrid is when the scheduler ticks: every CPU that runs a task ticks
// at the same instants (no skew_tick, the default), the jiffy grid, which
// the coarse clock reports as its last reading.
type tickGrid struct {
	tick  uint64 // ns
	phase uint64 // a tick's instant modulo tick, CLOCK_BOOTTIME
	ok    bool
}

// tickSlack is how late after its instant a tick may update a task: the
// tick's handler runs a few µs after the grid point; a task that exited
// within this of a grid point is given the tick before it too.
const tickSlack = 200 * time.Microsecond

func readTickGrid() tickGrid {
	g := tickGrid{tick: tick()}
	var coarse, mono, boot unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &coarse) != nil ||
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil || unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot) != nil {
		return g
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/nohz_full"); err == nil && len(bytes.TrimSpace(b)) > 0 && string(bytes.TrimSpace(b)) != "(null)" {
		return g // tickless CPUs: a running task may get no tick
	}
	at := uint64(coarse.Nano() + boot.Nano() - mono.Nano())
	g.phase, g.ok = at%g.tick, true
	return g
}

// sinceTick bounds the stretch of a task that exited at exit (its EXIT
// record, CLOCK_BOOTTIME) since its last update: the time since the last
// tick before it, or one tick where the grid is unknown.
func (g tickGrid) sinceTick(exit uint64) uint64 {
	if !g.ok || exit < g.tick {
		return g.tick
	}
	d := (exit + g.tick - g.phase) % g.tick // since the grid point before exit
	if d < uint64(tickSlack) {
		d += g.tick
	}
	return d
}

// cpus is the number of CPUs recorded.
func (r *Recorder) cpus() int { return len(r.rings) / len(r.kinds()) }

// tick is the scheduler tick (a jiffy) in ns: the resolution of the
// coarse clocks, which advance once a tick; 10 ms (HZ=100, the longest)
// where it cannot be read.
func tick() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil || ts.Nano() <= 0 || ts.Nano() > int64(10*time.Millisecond) {
		return uint64(10 * time.Millisecond)
	}
	return uint64(ts.Nano())
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
