package sampler

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/engine"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

var selfPID = os.Getpid()

// sys is the Linux sampler: the state lives in *state so that a cleanup
// attached to the Sampler can close its descriptors without keeping the
// Sampler reachable.
type sys struct {
	// eng is the engine whose configuration the sampler reads with (its
	// proc root, whether it uses pidfds), whose identity check of a task
	// read by name it makes, and whose clocks date and check what it
	// reads; nil is engine.Default, the system's.
	eng *engine.Engine
	st  *state
}

// state is everything the Linux sampler keeps between refreshes.
type state struct {
	eng     *engine.Engine
	clocks  *account.Clocks // eng's
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
	mono    int64 // clocks.Mono at the start of this refresh, before any read
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
	// afterProcClock, set by a test of the race it opens, is called with
	// a process's pid right after its CPU clock is read, before its state
	// is looked at.
	afterProcClock func(pid int)
}

func (s *sys) init(opts *Options) error {
	eng := s.eng
	if eng == nil {
		eng = engine.Default
	}
	st := &state{eng: eng, clocks: eng.Clocks(), opts: opts, procs: make(map[int]*proc), procfd: -1, dents: make([]byte, 64<<10)}
	st.budget = fileBudget(opts.MaxFiles)
	fd, err := unix.Open(eng.ProcRoot(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", eng.ProcRoot(), err)
	}
	st.procfd = fd
	st.files = 1
	if eng.UsesPidfd() && st.files+1 <= st.budget {
		if w, err := kernel.NewExitWatcher("cputime-sampler-exits"); err == nil {
			st.watch = w
			st.files++
		}
	}
	s.st = st
	return nil
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

// CPU clocks, read as the root package reads them (internal/kernel).
const cpuclockSched = kernel.ClockSched

func processClock(pid int) int32 { return kernel.ProcessClock(pid, 0) }

func threadClock(tid int) int32 { return kernel.ThreadClock(tid, 0) }

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
	st.mono = st.clocks.Mono()
	st.offset = st.clocks.BootOffset()
	first := dst.First

	// The processes to look at: the listed ones, or all of /proc.
	if len(st.opts.PIDs) > 0 {
		st.ids = append(st.ids[:0], st.opts.PIDs...)
		slices.Sort(st.ids)
		st.ids = slices.Compact(st.ids)
	} else if err := st.listing(st.procfd); err != nil {
		return fmt.Errorf("listing %s: %w", st.eng.ProcRoot(), err)
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

// keep the cleanup from holding the Sampler.
func attachCleanup(s *Sampler) {
	if s.sys.st != nil {
		runtime.AddCleanup(s, func(st *state) { st.closeAll() }, s.sys.st)
	}
}
