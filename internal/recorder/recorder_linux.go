package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
)

// Why perf_event and not ptrace (TestOverhead compares the two; its
// figures are in docs/figures.md):
//
//   - perf_event: no task ever stops. Its costs are the inherited counters'
//     allocation at each creation (one per CPU), their switching at context
//     switches, and the records.
//   - ptrace with TRACECLONE|TRACEEXIT stops the creating thread at each
//     clone, the new thread at its first instruction and every thread at
//     its exit: tracer round trips for every thread (strace -f stopping at
//     clones and exits is the closest stand-in). Every signal also becomes
//     a stop the tracer must pass on (Go programs get SIGURG many times a
//     second), and CMD could no longer be debugged or traced, since a task
//     has one tracer.
//
// How exact perf's count is (the source without taskstats): a task's
// count is the time its counters were scheduled in, from the end of each
// switch to it until the exit hook in do_exit, by perf's clock
// (local_clock); the scheduler's runtime (which wait4, schedstat and the
// CPU clocks sum) runs from the start of each switch, by the runqueue's
// task clock, which leaves out interrupt time and, in a guest, the time
// the host stole from the vCPU: close to the tasks' own clocks when quiet
// and without steal, further off, both ways, under a busy host
// (docs/figures.md). The exit records of taskstats carry the scheduler's
// own figure; they need CAP_NET_ADMIN (exitSource).
//
// The context swap (two clone tasks' counter contexts exchanged at a
// switch between them, and with inherit_stat their counts swapped back,
// paired by list position) is turned off where the kernel allows it
// (Linux 6.12: PERF_SAMPLE_READ with inherit sets nr_no_switch_fast).
// With another perf user's counters in the contexts the positions no
// longer pair like with like: perf stat beside the recording, or a nested
// one, would leave threads off by their neighbours' counts. Without the
// swap the original counters also stay on the top process's main thread.

// pollInterval bounds how long records wait in a ring buffer; when a
// buffer fills, its watermark wakes the reader earlier (the polled,
// system-wide buffers), or pace shortens the wait (the others).
const pollInterval = 20 * time.Millisecond

// safetyMargin is how long after a round's start a record stamped before it
// may still be committed to its buffer, for ordering records across CPUs.
const safetyMargin = 50 * time.Millisecond

// defaultRingPages is the size of each ring buffer the recording asks for,
// in pages: 512 KiB, two per CPU. Unprivileged, the kernel allows
// perf_event_mlock_kb (516 KiB) per CPU plus RLIMIT_MEMLOCK; where that is
// less, every buffer is halved until they all fit (openRings).
const defaultRingPages = 128

// systemPages is the size of each system-wide ring buffer (root: no mlock
// allowance to keep under), in pages: 2 MiB in all, at most 1 MiB and at
// least defaultRingPages each. Each creation and exit takes about 150
// bytes, so 1 MiB holds about 7,000 tasks, and the reader wakes when a
// buffer is a quarter full. The kernel clears each buffer's pages when it
// is mapped and frees them at the end, both while the user waits, so
// larger buffers make every run longer (docs/figures.md); 1 MiB loses no
// record in RecordBirths and run-scale.
func systemPages(cpus int) int {
	page := os.Getpagesize()
	pages := 1
	for next := pages * 2; next*page*max(cpus, 1) <= 2<<20 && next*page <= 1<<20; next *= 2 {
		pages = next
	}
	return max(pages, defaultRingPages)
}

// maxKeptFiles caps the stat files kept open for running threads; past it
// a thread's stat is opened for each read.
const maxKeptFiles = 2048

// Recorder is a recording in progress: started by Start, ended by Stop.
type Recorder struct {
	pid   int
	start time.Time
	since uint64  // CLOCK_BOOTTIME at the start, ns
	rings []*ring // each online CPU's counters (kinds)
	// noSwitchFast: the counters were opened with the context swap off
	// (Linux 6.12 on); ringBytes is each ring buffer's size.
	noSwitchFast bool
	ringBytes    int
	// system: the events watch every task on the machine (pid -1), and
	// the tree is picked out of their records by who created whom.
	system bool
	// paced is how long the reader waits between rounds where the ring
	// buffers are not polled (pace).
	paced time.Duration
	// exits is the taskstats source of final times, nil where the
	// recording counts with perf (exitsErr says why).
	exits    *exitSource
	exitsErr error
	// waiting holds, by thread id, the exit records of tasks no perf
	// record named yet (addTask takes them), and waitOrder the ids in
	// order of arrival, to drop them after unmatchedFor.
	waiting   map[int]*exitRecord // each the first of its id's, chained by next
	waitOrder []int
	taken     []*exitRecord // takeExits' buffer
	// steal0 is the machine's steal time at the start (/proc/stat), and
	// offset0 the wall clock's offset from CLOCK_BOOTTIME.
	steal0  uint64
	offset0 int64
	grid    tickGrid
	stop    chan struct{}
	samples bool          // Options.Samples
	memory  memorySampler // on where Options.SampleMemory, or where Held failed
	test    testHooks     // Options.test's, if set
	wake    int           // an eventfd in the reading goroutine's poll set, -1 if none
	done    chan struct{}
	stopped bool

	// owner is held by whichever goroutine works on the state below: the
	// reading goroutine for each round, Stop for the end. Stop takes it
	// over rather than ask the reading goroutine to finish and wait for
	// it: that goroutine would first have to be scheduled (and, were it
	// locked to a thread, be handed a P and its thread woken), all of it
	// time the user waits. stop, closed under owner, tells the reading
	// goroutine to return without another look.
	owner sync.Mutex

	// Owned by the goroutine holding owner.
	tasks    map[int]*task // by tid: the latest task with that id
	live     []*task       // tasks with no EXIT record yet, each at its liveAt-1
	procs    map[int]*proc // by pid
	order    []*proc       // in order of appearance
	lost     uint64
	kept     int
	buf      []byte
	lastStat time.Time
	pending  []pendingRecord
	merged   []pendingRecord // pending's other buffer (mergeRuns)
	runs     []int           // drainAll's runs of pending
	arena    []byte
	spare    []byte // the arena's other half (drainAll)
	safe     uint64 // CLOCK_BOOTTIME before the previous round's reads
}

// Start starts cmd with the counters open on it before CMD's first
// instruction, and returns once CMD runs. cmd's process first runs the
// launcher (launcher_linux.go), which waits on a pipe while the counters
// are opened on it and then execs CMD; no task stops, so whenever cputime
// dies CMD is never left stopped or killed: before the counters are open it
// does not run at all (the launcher exits 125), after that it runs on,
// unrecorded. If recording is impossible Start reaps the launcher, which
// has not run CMD, and returns an error wrapping ErrNotSupported; cmd
// cannot be started again, but a new Cmd for the same program can. An error
// starting CMD itself is returned as Cmd.Start returns it: cmd.Err (not
// found) before anything starts, or the exec's error as a *fs.PathError
// ("fork/exec PATH"), once the launcher has been reaped.
func Start(cmd *exec.Cmd, opts ...Options) (*Recorder, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	var test testHooks
	if o.test != nil {
		test = *o.test
	}
	if cmd.Err != nil || cmd.Process != nil {
		return nil, cmd.Start() // the error Cmd.Start gives
	}
	if err := privileged(cmd.Path); err != nil {
		return nil, err
	}
	// Before CMD starts, so that no exit of the tree is missed.
	exits, exitsErr := openExits(test.perfOnly)
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
	// Held (moving the process into a cgroup: a migration of half a ms)
	// runs while the counters open, done before the release in any case.
	heldErr := make(chan error, 1)
	if o.Held != nil {
		go func() { heldErr <- o.Held(pid) }()
	} else {
		heldErr <- nil
	}
	r := &Recorder{pid: pid, start: start, since: since, stop: make(chan struct{}), done: make(chan struct{}),
		tasks: map[int]*task{}, procs: map[int]*proc{}, exits: exits, exitsErr: exitsErr,
		steal0: stealTicks(), offset0: account.BootOffset(), grid: readTickGrid(), wake: -1, samples: o.Samples, test: test}
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		r.wake = fd
	}
	if err := r.openRings(pid); err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOENT) {
			err = fmt.Errorf("%w: %v (perf_event_paranoid must be 2 or less: /proc/sys/kernel/perf_event_paranoid)", ErrNotSupported, err)
		}
		<-heldErr
		closeExits()
		held.abort()
		r.closeWake()
		return nil, err
	}
	if test.beforeRelease != nil {
		test.beforeRelease(pid)
	}
	r.memory.on = <-heldErr != nil || o.SampleMemory
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
	if r.memory.on {
		r.memory.sample(r.live) // CMD's first instants: a tree gone before the first round has this
	}
	go r.loop()
	return r, nil
}

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
// defaultRingPages down, that the mlock allowance takes for all of them.
func (r *Recorder) openRings(pid int) error {
	if r.exits != nil && !r.test.perTaskOnly {
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

// openAll opens r.kinds() on every online CPU for pid (-1: every task).
func (r *Recorder) openAll(pid int) error {
	cpus := onlineCPUs(runtime.NumCPU())
	r.noSwitchFast = true
	pages := defaultRingPages
	if pid == -1 {
		pages = systemPages(len(cpus))
	}
	if r.test.ringPages != 0 {
		pages = r.test.ringPages // a test's
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
	r.live = append(r.live, t)
	t.liveAt = len(r.live)
	p := r.procs[t.pid]
	// A new leader for a pid whose process had its own leader (with its
	// FORK, or the top) that exited: the pid was reused.
	if p == nil || t.pid == t.tid && p.tasks[0].tid == t.pid && p.tasks[0].exited && (p.tasks[0].fork != 0 || p.tasks[0].top) {
		p = &proc{pid: t.pid, ppid: ppid, earlier: p}
		r.procs[t.pid] = p
		r.order = append(r.order, p)
	}
	if t.final == nil && len(r.waiting) > 0 && r.waiting[t.tid] != nil {
		r.takeWaiting(t, p)
	}
	p.add(t)
}

func (r *Recorder) loop() {
	defer close(r.done)
	// The reading goroutine runs at the process's priority, on no thread
	// of its own. A reader at nice 19 would not give the work the CPUs
	// first: CMD is in cputime's session, so in cputime's autogroup
	// (sched_autogroup_enabled, as on most distributions), and beside CPU
	// hogs in another session such a reader slowed CMD down, where one at
	// nice 0 did not (docs/figures.md). The likely cause: the kernel shares
	// a group's weight out among the CPUs by the load each carries, and a
	// nice-19 thread running on a CPU may leave the group there a sliver of
	// its weight for the work's next task. Unlocked, it also costs no more
	// CPU: no P is handed to a locked thread at each wakeup and there is
	// no wait for that thread's turn.
	//
	// The ring buffers of counters inherited by the tree's tasks are not
	// polled: the kernel wakes whoever polls an inherited counter at every
	// exit of a task that inherited it (perf_event_exit_event), so the
	// reader was woken at nearly every exit in the tree, each wakeup paid
	// by the exiting task, a cost to the tree's wall time and the
	// recording's CPU (docs/figures.md). The reader reads them on a timer
	// instead, as pace sets it.
	fds := make([]int, 0, len(r.rings)+1)
	if r.system {
		for _, x := range r.rings {
			fds = append(fds, x.fd)
		}
	}
	r.paced = minPace
	if r.wake >= 0 {
		fds = append(fds, r.wake)
	}
	w := newWaiter(fds)
	defer w.close()
	defer r.closeWake() // Stop wakes the loop once, under owner, then leaves the descriptor to it
	for {
		w.wait(r.pollEvery())
		if r.test.holdDrains != nil {
			select {
			case <-r.test.holdDrains:
			case <-r.stop:
			}
		}
		if !r.round() {
			return
		}
	}
}

// round reads what came since the last one, unless Stop has taken over:
// then it reports false.
func (r *Recorder) round() bool {
	r.owner.Lock()
	defer r.owner.Unlock()
	select {
	case <-r.stop:
		return false
	default:
	}
	if !r.system {
		r.pace()
	}
	r.drainAll(false)
	if r.exits != nil {
		r.exits.drain()
	}
	r.takeExits()
	if r.statsWanted() && time.Since(r.lastStat) >= StatInterval {
		r.readStats(false)
	}
	if r.memory.on && time.Since(r.memory.last) >= StatInterval {
		r.memory.sample(r.live)
	}
	return true
}

// finish takes the recording over from the reading goroutine and reads
// what is left: the end of Stop.
func (r *Recorder) finish() {
	r.owner.Lock()
	defer r.owner.Unlock()
	close(r.stop)
	r.wakeLoop() // under owner: the loop closes the descriptor only after it took owner
	r.drainAll(true)
	if r.memory.on {
		r.memory.sample(r.live) // the orphans still running; the top process is a zombie
	}
	r.readStats(true)
	r.awaitExits()
}

// statsWanted says whether running tasks' stat and schedstat files are read
// every StatInterval: for the timeline's samples, and without taskstats for
// the ticks that split each task's count. With taskstats and no samples
// each exit record carries the kernel's own ticks, and the reads (two opens
// per task seen running, and a sample kept) would be a share of the
// reader's CPU for nothing; the last look at the end still reads the tasks
// left running. Once receiving exit records failed, they are read again.
func (r *Recorder) statsWanted() bool {
	if r.samples || r.exits == nil {
		return true
	}
	_, err := r.exits.state()
	return err != nil
}

// pollEvery is how long the reading goroutine waits for a buffer to reach
// its watermark (a quarter full) before it reads anyway. With system-wide
// buffers (root), which hold a long burst, and no samples asked for,
// systemPollEvery: each wakeup of a reader costs, in a virtual machine,
// the work it records too. Where the buffers are not polled (the counters
// inherited by the tree's tasks), what pace set.
func (r *Recorder) pollEvery() time.Duration {
	switch {
	case !r.system:
		return r.paced
	case !r.samples:
		return systemPollEvery
	}
	return pollInterval
}

// minPace is the shortest wait between rounds that pace sets.
const minPace = time.Millisecond

// pace sets the wait before the next round where the ring buffers are not
// polled, so that the fullest is about an eighth full at it: the wait so
// far scaled by an eighth of a buffer over what the fullest holds now,
// from minPace up to twice the wait so far, at most pollInterval. The
// first wait is minPace, as a tree's first burst of tasks comes at once.
// An events buffer takes the creation, name and exit records (about 150
// bytes) of the tasks on its CPU, a counts buffer a READ record (40
// bytes) of every exit in the tree: at 512 KiB the fuller kind holds
// about 3,500 tasks, so read every pollInterval they keep up with 175,000
// creations a second, and faster with the rounds sooner. Buffers the mlock
// allowance halved fill sooner, and the rounds come sooner with them; what
// the reader could not keep up with, the kernel counts as lost, and the
// record says so.
func (r *Recorder) pace() {
	var most uint64
	for _, x := range r.rings {
		most = max(most, x.Used())
	}
	next := min(2*r.paced, pollInterval)
	if most > 0 {
		next = min(next, time.Duration(uint64(r.paced)*uint64(r.ringBytes/8)/most))
	}
	r.paced = max(next, minPace)
}

// systemPollEvery is pollEvery with system-wide buffers and no samples.
// What is left to read when CMD exits is read after it, while the user
// waits: every 50 ms that is up to 100 ms of records (with safetyMargin).
// A longer interval leaves more to read at the end without saving the
// recording any CPU (docs/figures.md).
const systemPollEvery = 50 * time.Millisecond

// wakeLoop ends the reading goroutine's wait, so that, once stop is
// closed, it returns (closing the eventfd) at once rather than after the
// poll interval: Close waits for that, Stop does not. The caller holds
// owner, so the descriptor is still open.
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
// every task the tree creates, so each costs every creation and exit. The
// two stay apart, each buffer with one writer at a time (see the package
// comment): a counts counter that also wrote the events' records cut
// run's time on 5,000 short threads, unprivileged, from 1.18x to 1.14x
// the bare run's (a build changed for the measurement, not kept; 12
// interleaved rounds, perf stat 1.06x), but its buffer would have had two
// writers again.
func (r *Recorder) kinds() []ringKind {
	if r.exits != nil {
		return []ringKind{ringEvents}
	}
	return []ringKind{ringCounts, ringEvents}
}

// cpus is the number of CPUs recorded.
func (r *Recorder) cpus() int { return len(r.rings) / len(r.kinds()) }
