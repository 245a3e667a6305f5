package account

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// UserHZ is the unit of the times in /proc stat files (USER_HZ, the clock_t
// of times(2)): 100 on every Linux architecture Go supports, but the kernel
// states it in the auxiliary vector (AT_CLKTCK), so take it from there as
// sysconf(_SC_CLK_TCK) does.
var UserHZ = sync.OnceValue(func() uint64 {
	const atClktck = 17 // AT_CLKTCK, include/uapi/linux/auxvec.h
	if auxv, err := unix.Auxv(); err == nil {
		for _, kv := range auxv {
			if kv[0] == atClktck && kv[1] > 0 {
				return uint64(kv[1])
			}
		}
	}
	return 100
})

// TicksToNanos converts USER_HZ clock ticks to nanoseconds, saturating.
func TicksToNanos(ticks uint64) uint64 {
	hz := UserHZ()
	s := ticks / hz
	if s >= math.MaxUint64/uint64(1e9) {
		return math.MaxUint64
	}
	return s*1e9 + (ticks%hz)*1e9/hz
}

// The boot offset, CLOCK_REALTIME − CLOCK_BOOTTIME, turns a start time in
// ticks since boot into a wall-clock instant. It is read at run time rather
// than taken from /proc/stat's btime (whole seconds, stale after every
// clock step), and it is one value for the whole process: a task's creation
// time must read the same in every query (Windows code identifies a
// process by its id and creation time), and the same in every process
// within a few microseconds.
//
// A reading brackets CLOCK_REALTIME (inside time.Now, with the monotonic
// clock) between two CLOCK_BOOTTIME system calls; its width bounds its
// error. A process takes the narrowest of several readings once, and keeps
// it. On each query, time.Now alone tells whether the wall clock has moved
// against the monotonic clock (a step: settimeofday, clock_settime, a leap
// second); the two only ever move together otherwise, NTP slewing
// included. CLOCK_BOOTTIME leaves CLOCK_MONOTONIC only across a suspend,
// which costs a system call to see, so that is checked at most once a
// second. Either way the offset changes only when two narrow readings
// agree on a new value: one reading stretched by preemption (up to
// milliseconds under load) is never taken for a step.

// offsetTolerance is the largest difference between the kept offset and a
// reading that is not taken as a change of the clocks: above the error of a
// narrow reading (microseconds), far below a creation time's precision
// (a tick, 10 ms).
const offsetTolerance = 50 * time.Microsecond

// maxNarrowWidth is the width under which a reading is taken at once; wider
// ones are retried, keeping the narrowest.
const maxNarrowWidth = 5 * time.Microsecond

type bootState struct {
	offset  int64 // the kept CLOCK_REALTIME − CLOCK_BOOTTIME, ns
	refMono int64 // the monotonic reading of the last reading or check, ns
	refBoot int64 // CLOCK_BOOTTIME then, ns
}

// Clocks reads CLOCK_REALTIME, CLOCK_MONOTONIC and CLOCK_BOOTTIME, and keeps
// the boot offset over them. System is the process's; NewClocks makes one
// over another source of the clocks (a test's, which it steps).
type Clocks struct {
	src  Source // nil: the system's clocks
	boot atomic.Pointer[bootState]
	mu   sync.Mutex    // serializes readings and changes
	kept atomic.Uint32 // KeptOffset's calls
}

// Source is a source of the clocks other than the system's.
type Source interface {
	// Now returns CLOCK_REALTIME (Unix ns) and CLOCK_MONOTONIC (ns since
	// any base), read together.
	Now() (wall, mono int64)
	// Boottime returns CLOCK_BOOTTIME, ns.
	Boottime() int64
}

// NewClocks returns Clocks that read src, with a boot offset of their own.
func NewClocks(src Source) *Clocks { return &Clocks{src: src} }

// System is the process's clocks, with its one boot offset: the package's
// functions read them.
var System = new(Clocks)

// now returns CLOCK_REALTIME and CLOCK_MONOTONIC (since monoBase), both
// from one time.Now (the vDSO: no system call).
func (c *Clocks) now() (wall, mono int64) {
	if c.src != nil {
		return c.src.Now()
	}
	t := time.Now()
	return t.UnixNano(), int64(t.Sub(monoBase))
}

// boottime reads CLOCK_BOOTTIME: a system call from Go.
func (c *Clocks) boottime() int64 {
	if c.src != nil {
		return c.src.Boottime()
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return ts.Nano()
}

var monoBase = time.Now()

// BootOffset is System.BootOffset.
func BootOffset() int64 { return System.BootOffset() }

// BootOffset returns CLOCK_REALTIME − CLOCK_BOOTTIME in nanoseconds: the
// one value of these clocks, changed only on a confirmed clock step or
// resume.
func (c *Clocks) BootOffset() int64 {
	wall, mono := c.now()
	return c.bootOffset(wall, mono)
}

// keptCheckEvery is how many KeptOffset calls share one check of the
// clocks.
const keptCheckEvery = 64

// KeptOffset is BootOffset for the hottest paths (a handle whose task has
// not run since its last read, where reading the wall clock would cost a
// fifth of the query): it returns the offset as last checked, and checks
// the clocks for a step on one call in keptCheckEvery. It is the same one
// offset every path uses; a step is seen by the next BootOffset call of
// any path in the process (a one-shot, a sampler refresh, a handle whose
// task ran), or at the latest by the keptCheckEvery-th call here.
func (c *Clocks) KeptOffset() int64 {
	if st := c.boot.Load(); st != nil && c.kept.Add(1)%keptCheckEvery != 0 {
		return st.offset
	}
	return c.BootOffset()
}

// Clock is one reading of the clocks a query needs, from one time.Now.
type Clock struct {
	Wall   int64 // CLOCK_REALTIME, Unix ns
	Mono   int64 // CLOCK_MONOTONIC, ns since an arbitrary base in this process
	Offset int64 // BootOffset
}

// Mono is Clock.Mono alone, read now: for a query that needs a second
// monotonic reading, without the wall clock and the boot offset.
func (c *Clocks) Mono() int64 {
	_, mono := c.now()
	return mono
}

// Now reads the clocks once: a query's checks and caches share it.
func (c *Clocks) Now() Clock {
	wall, mono := c.now()
	return Clock{Wall: wall, Mono: mono, Offset: c.bootOffset(wall, mono)}
}

// CheckStart is the package's CheckStart at c.
func (c Clock) CheckStart(ticks uint64) error { return checkStart(ticks, c.Wall-c.Offset) }

// CheckRuntime is the package's CheckRuntime at c.
func (c Clock) CheckRuntime(rtime, start uint64, process bool) error {
	return checkRuntime(rtime, start, process, c.Wall-c.Offset)
}

func (c *Clocks) bootOffset(wall, mono int64) int64 {
	if st := c.boot.Load(); st != nil {
		el := mono - st.refMono
		if el >= 0 && el < int64(time.Second) {
			fresh := wall - (st.refBoot + el)
			if d := fresh - st.offset; d < int64(offsetTolerance) && -d < int64(offsetTolerance) {
				return st.offset
			}
		}
	}
	return c.recheckOffset()
}

// reading is one bracketed reading of the boot offset.
type reading struct {
	offset, boot, mono int64 // ns
	width              int64 // ns: the error is at most half of it
}

// narrowReading returns the narrowest of up to ten readings, fewer if one
// is narrower than maxNarrowWidth.
func (c *Clocks) narrowReading() reading {
	best := reading{width: math.MaxInt64}
	for range 10 {
		b1 := c.boottime()
		wall, mono := c.now()
		b2 := c.boottime()
		if w := b2 - b1; w >= 0 && w < best.width {
			mid := b1 + w/2
			best = reading{offset: wall - mid, boot: mid, mono: mono, width: w}
			if w <= int64(maxNarrowWidth) {
				break
			}
		}
	}
	return best
}

func (c *Clocks) recheckOffset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.boot.Load()
	r := c.narrowReading()
	if st == nil {
		c.boot.Store(&bootState{offset: r.offset, refMono: r.mono, refBoot: r.boot})
		return r.offset
	}
	if d := r.offset - st.offset; d <= int64(offsetTolerance)+r.width && -d <= int64(offsetTolerance)+r.width {
		// No change: keep the offset, with a fresh reference for the next
		// second of cheap checks.
		c.boot.Store(&bootState{offset: st.offset, refMono: r.mono, refBoot: r.boot})
		return st.offset
	}
	// A change, if a second reading says the same.
	r2 := c.narrowReading()
	if d := r2.offset - r.offset; d <= int64(offsetTolerance)+r.width+r2.width && -d <= int64(offsetTolerance)+r.width+r2.width {
		c.boot.Store(&bootState{offset: r2.offset, refMono: r2.mono, refBoot: r2.boot})
		return r2.offset
	}
	// The two disagree: a reading was disturbed (or the clock is being
	// stepped right now). Keep the offset; the next query looks again.
	return st.offset
}

// Creation returns the wall-clock instant of a start time in USER_HZ ticks
// since boot, with offset from BootOffset: the start of the tick the kernel
// dated the task to. The true instant lies in [ticks, ticks+1), so this is
// at most a tick (10 ms) early, and never late.
//
// It is the tick's start, not its middle (which would be unbiased), because
// a creation time is an identity: Windows code keys a process by (pid,
// creation time), so every reader in every process, at any moment, must get
// the same value, and it must never lie after the moment it is read nor
// after the task's exit (FILETIME arithmetic is unsigned). The middle of the
// tick is after both for a task younger than half a tick; clamping it to the
// moment of the read, as cputime once did, gave readers that looked at a
// young task different creation times. The start of the tick is the one
// value the kernel's 10 ms start time allows that meets all three.
func Creation(ticks uint64, offset int64) time.Time {
	return time.Unix(0, offset+int64(TicksToNanos(ticks)))
}

// CheckStart refuses a start time after now (with a tick of slack for the
// truncation), given offset from BootOffset.
func (c *Clocks) CheckStart(ticks uint64, offset int64) error {
	wall, _ := c.now()
	return checkStart(ticks, wall-offset)
}

func checkStart(ticks uint64, nowBoot int64) error {
	if start := TicksToNanos(ticks); start > uint64(nowBoot)+2*1e9/UserHZ() {
		return fmt.Errorf("%w: start time %d ticks after boot is after now (%d ns after boot)", ErrImpossible, ticks, nowBoot)
	}
	return nil
}

// CheckRuntime refuses an exact on-CPU time that the task cannot have used
// since it started at start (USER_HZ ticks since boot): more than the time
// since then, on every CPU the machine can have for a process, on one for a
// thread, with slack for the scheduler clock's drift from CLOCK_BOOTTIME
// (0.1 %) and two ticks for the truncated start.
func (c *Clocks) CheckRuntime(rtime, start uint64, process bool, offset int64) error {
	wall, _ := c.now()
	return checkRuntime(rtime, start, process, wall-offset)
}

func checkRuntime(rtime, start uint64, process bool, nowBoot int64) error {
	if limit, alive := runtimeLimit(start, process, nowBoot); rtime > limit {
		return fmt.Errorf("%w: %d ns of CPU time in the %d ns since the task started", ErrImpossible, rtime, alive)
	}
	return nil
}

// RuntimeLimit is the most CPU time CheckRuntime allows the task at c. It
// only grows with time: a reader that has it need not read the clocks again
// for a run time below it.
func (c Clock) RuntimeLimit(start uint64, process bool) uint64 {
	limit, _ := runtimeLimit(start, process, c.Wall-c.Offset)
	return limit
}

// runtimeLimit returns CheckRuntime's limit at nowBoot, and the time the
// task has existed.
func runtimeLimit(start uint64, process bool, nowBoot int64) (limit, alive uint64) {
	alive = uint64(max(nowBoot, 0))
	if s := TicksToNanos(start); s < alive {
		alive -= s
	} else {
		alive = 0
	}
	limit = alive + alive/1000 + 2*1e9/UserHZ()
	if process {
		n := uint64(PossibleCPUs())
		if limit > math.MaxUint64/n {
			return math.MaxUint64, alive
		}
		limit *= n
	}
	return limit, alive
}

// PossibleCPUs returns how many CPUs the machine can have
// (/sys/devices/system/cpu/possible), at least runtime.NumCPU.
var PossibleCPUs = sync.OnceValue(func() int {
	n := runtime.NumCPU()
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return n
	}
	cpus, err := procfs.ParseCPUList(string(b))
	if err != nil {
		return n
	}
	return max(len(cpus), n)
})
