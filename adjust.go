package cputime

import (
	"math/bits"
	"sync"
)

// The kernel knows a task's total on-CPU time to the nanosecond (the
// scheduler's sum_exec_runtime) but splits it between user and kernel mode
// only by sampling at timer ticks. Like the kernel's own cputime_adjust
// (kernel/sched/cputime.c), which produces the utime and stime of
// /proc/PID/stat and getrusage, we scale the exact total by the sampled
// ratio, and keep the last split of each task so that neither part ever goes
// backwards when the ratio shifts.

// split is the last user/kernel split reported for one task, in nanoseconds.
type split struct {
	mu     sync.Mutex
	user   uint64
	kernel uint64
}

// adjust divides rtime, the exact on-CPU time, in the ratio utime:stime of
// the tick-sampled counters (any unit, the same for both), and returns parts
// that add up to rtime and are each at least what s last returned. If rtime
// is not above the last total (an older reading raced a newer one), the last
// split is returned unchanged.
func (s *split) adjust(utime, stime, rtime uint64) (user, kernel uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user+s.kernel >= rtime {
		return s.user, s.kernel
	}
	switch {
	case stime == 0:
		// No tick has landed in kernel mode yet: all user, as the kernel
		// assumes; the monotonic clamp below converges to the sampled ratio
		// once ticks arrive.
		kernel = 0
	case utime == 0:
		kernel = rtime
	default:
		kernel = mulDiv(stime, rtime, utime+stime)
	}
	if kernel < s.kernel {
		kernel = s.kernel
	}
	user = rtime - kernel
	if user < s.user {
		user = s.user
		kernel = rtime - user
	}
	s.user, s.kernel = user, kernel
	return user, kernel
}

// total returns the sum of the last split: the exact total last reported.
func (s *split) total() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user + s.kernel
}

// extend raises the split to the exact total rtime when no new tick samples
// come with it (a reader that knows only the total, as cycle times do),
// keeping the last ratio. Like adjust, it never lowers either part, so what
// the handle last saw, which it reports if the task's accounting is gone,
// is never below any total it reported.
func (s *split) extend(rtime uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.user + s.kernel
	if rtime <= total {
		return
	}
	if total == 0 {
		s.user = rtime
		return
	}
	kernel := max(mulDiv(s.kernel, rtime, total), s.kernel)
	s.user, s.kernel = max(rtime-kernel, s.user), kernel
	if s.user+s.kernel > rtime { // rounding: never above the total
		s.kernel = rtime - s.user
	}
}

// last returns the last split reported.
func (s *split) last() (user, kernel uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user, s.kernel
}

// mulDiv returns a*b/c without intermediate overflow, saturating at b when
// the quotient would exceed it (a ≤ c in every use, so it never does unless
// utime+stime overflowed).
func mulDiv(a, b, c uint64) uint64 {
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

// taskKey identifies one task for the life of the machine: its id and its
// start time in clock ticks since boot (a reused id comes with a later start
// time), and whether it names a thread or the whole process (a process and
// its main thread share an id but not their times).
type taskKey struct {
	id     int32
	thread bool
	start  uint64
}

// splits holds the split state of every task this process has read, so that
// all readers of one task (handles, one-shot calls, enumerations) share one
// monotonic series, as all readers of /proc/PID/stat share the kernel's.
// It is bounded: two generations of at most splitGeneration entries each;
// a task not read for two generations starts afresh. A handle keeps its own
// pointer and is never affected by eviction.
var splits = struct {
	sync.Mutex
	cur, old map[taskKey]*split
}{cur: make(map[taskKey]*split)}

const splitGeneration = 4096

func splitFor(k taskKey) *split {
	splits.Lock()
	defer splits.Unlock()
	if s, ok := splits.cur[k]; ok {
		return s
	}
	s, ok := splits.old[k]
	if !ok {
		s = new(split)
	}
	if len(splits.cur) >= splitGeneration {
		splits.old, splits.cur = splits.cur, make(map[taskKey]*split, splitGeneration)
	}
	splits.cur[k] = s
	return s
}
