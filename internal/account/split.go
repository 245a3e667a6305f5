package account

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Evidence is what the kernel reports about one task at one moment, from
// which Rule splits its time. Each kind of task offers its own:
//
//   - a process: its CPUCLOCK_VIRT and CPUCLOCK_PROF CPU clocks (user ticks,
//     and user + kernel ticks, in ns: one scheduler tick each, 1 to 10 ms),
//     readable for any pid without privilege;
//   - a thread of the calling process: the same two clocks of the thread;
//   - a thread of another process: utime and stime of its stat file (the
//     kernel's own adjusted split, in whole USER_HZ ticks).
type Evidence struct {
	UTime, STime uint64 // tick-sampled user and kernel time, in any one unit
	RTime        uint64 // exact on-CPU time (sum_exec_runtime), ns
	KThread      bool   // a kernel thread (PF_KTHREAD): never in user mode
}

// PFKthread is PF_KTHREAD (include/linux/sched.h), in the flags field of a
// stat line: the task is a kernel thread.
const PFKthread = 0x00200000

// ErrImpossible is wrapped by every error for a value the kernel could not
// have produced (a runtime beyond the machine's uptime, a start after now,
// tick counts whose sum overflows).
var ErrImpossible = errors.New("impossible value from the kernel")

// Rule divides the exact total e.RTime between user and kernel mode in the
// ratio of the tick samples: the kernel's cputime_adjust without its
// per-task memory. A kernel thread's time is all kernel time. A task that
// no tick has sampled yet, or only in user mode, is all user, as the kernel
// has it (getrusage and /proc/PID/stat say the same); one sampled only in
// kernel mode is all kernel.
func Rule(e Evidence) (user, kernel uint64) {
	switch {
	case e.KThread:
		return 0, e.RTime
	case e.STime == 0:
		return e.RTime, 0
	case e.UTime == 0:
		return 0, e.RTime
	}
	kernel = MulDiv(e.STime, e.RTime, e.UTime+e.STime)
	return e.RTime - kernel, kernel
}

// CheckTicks refuses tick samples whose sum overflows, which Rule could not
// divide by: no kernel counts 2^64 ns or ticks of CPU time.
func CheckTicks(e Evidence) error {
	if _, carry := bits.Add64(e.UTime, e.STime, 0); carry != 0 {
		return fmt.Errorf("%w: user %d + kernel %d ticks overflow", ErrImpossible, e.UTime, e.STime)
	}
	return nil
}

// Split is one reader's memory of the split it last reported for its task
// (a handle's, a sampler entry's, a measured region's), in nanoseconds. It
// must belong to something bound to one task for its life: never key it by
// an id, which a new task can inherit. The zero Split is ready to use.
type Split struct {
	mu     sync.Mutex
	user   uint64
	kernel uint64
	// total is user + kernel, stored under mu and loaded without it: a
	// running task's reader learns that its total is not covered (Covers)
	// without taking the lock.
	total atomic.Uint64
}

// Adjust returns Rule's answer for e, raised where needed so that neither
// part is below what s last returned, with the parts still adding up to
// e.RTime (the kernel's cputime_adjust clamps the same way). If e.RTime is
// not above the last total (an older reading raced a newer one, or the task
// has not run), the last split is returned unchanged. A fresh Split returns
// Rule's answer: the first read of a handle agrees with a one-shot read.
func (s *Split) Adjust(e Evidence) (user, kernel uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user+s.kernel >= e.RTime {
		return s.user, s.kernel
	}
	user, kernel = Rule(e)
	if kernel < s.kernel {
		kernel = s.kernel
		user = e.RTime - kernel
	}
	if user < s.user {
		user = s.user
		kernel = e.RTime - user
	}
	s.user, s.kernel = user, kernel
	s.total.Store(user + kernel)
	return user, kernel
}

// Total returns the sum of the last split: the exact total last reported.
func (s *Split) Total() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user + s.kernel
}

// Extend raises the split to the exact total rtime when no new tick samples
// come with it (a reader that knows only the total, as cycle times do),
// keeping the last ratio. Like Adjust, it never lowers either part.
func (s *Split) Extend(rtime uint64, kthread bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.total.Store(s.user + s.kernel) }()
	total := s.user + s.kernel
	if rtime <= total {
		return
	}
	if total == 0 {
		if kthread {
			s.kernel = rtime
		} else {
			s.user = rtime
		}
		return
	}
	kernel := max(MulDiv(s.kernel, rtime, total), s.kernel)
	s.user, s.kernel = max(rtime-kernel, s.user), kernel
	if s.user+s.kernel > rtime { // rounding: never above the total
		s.kernel = rtime - s.user
	}
}

// Last returns the last split reported.
func (s *Split) Last() (user, kernel uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user, s.kernel
}

// Covers returns the last split if it already accounts for rtime: a reader
// whose task has not run since its last read has its answer without the
// checks and clock readings a new total needs.
func (s *Split) Covers(rtime uint64) (user, kernel uint64, ok bool) {
	if rtime == 0 || rtime > s.total.Load() { // the total only grows
		return 0, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user+s.kernel < rtime || rtime == 0 {
		return 0, 0, false
	}
	return s.user, s.kernel, true
}

// MulDiv returns a*b/c without intermediate overflow, saturating at b when
// the quotient would exceed it (a ≤ c in every use, so it never does unless
// the caller's sum overflowed).
func MulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return b
	}
	q, _ := bits.Div64(hi, lo, c)
	if q > b {
		return b
	}
	return q
}

// SplitBetween splits the exact on-CPU time between two samples of one
// thread (a measured region) in the ratio of the ticks between them, or of
// all the thread's ticks if none landed in between.
func SplitBetween(start, end Evidence) (user, kernel uint64) {
	if end.RTime <= start.RTime {
		return 0, 0
	}
	total := end.RTime - start.RTime
	u, s := subFloor(end.UTime, start.UTime), subFloor(end.STime, start.STime)
	if u+s == 0 {
		u, s = end.UTime, end.STime
	}
	switch {
	case s == 0:
	case u == 0:
		kernel = total
	default:
		kernel = MulDiv(s, total, u+s)
	}
	return total - kernel, kernel
}

// subFloor is a − b, or 0 where b > a.
func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
