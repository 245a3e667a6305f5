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
// ratio.
//
// One rule, splitRule, turns a task's evidence into its split, on every
// path (handles, one-shot calls, enumerations, the sampler, the command),
// and it is a pure function of what the kernel reports: the same task in
// the same state gets the same answer from every path and in every process.
// What differs is only the evidence each kind of task offers:
//
//   - a process: its CPUCLOCK_VIRT and CPUCLOCK_PROF clocks (user ticks, and
//     user + kernel ticks, in ns: one scheduler tick each, 1 to 10 ms);
//   - a thread of the calling process: the same two clocks of the thread;
//   - a thread of another process: utime and stime of its stat file (the
//     kernel's own adjusted split, in whole USER_HZ ticks).
//
// What is kept between reads (a split, below) belongs to one handle, one
// sampler entry or one Measure region, each bound to its task by something
// the kernel never hands to another task (a pidfd, an open /proc file, the
// calling thread itself), and only ever raises the pure answer so that
// neither part goes backwards: no state keyed by an id, which a new task
// could inherit.

// evidence is what the kernel reports about one task at one moment.
type evidence struct {
	utime, stime uint64 // tick-sampled user and kernel time, any unit (the same for both)
	rtime        uint64 // exact on-CPU time, ns
	kthread      bool   // a kernel thread (PF_KTHREAD): never in user mode
}

// pfKthread is PF_KTHREAD (include/linux/sched.h): the task is a kernel
// thread, which never runs in user mode.
const pfKthread = 0x00200000

// splitRule divides the exact total rtime between user and kernel mode in
// the ratio of the tick samples: the kernel's cputime_adjust without its
// per-task memory. A kernel thread's time is all kernel time. A task that
// no tick has sampled yet, or only in user mode, is all user, as the
// kernel has it (getrusage and /proc/PID/stat say the same); one sampled
// only in kernel mode is all kernel.
func splitRule(e evidence) (user, kernel uint64) {
	switch {
	case e.kthread:
		return 0, e.rtime
	case e.stime == 0:
		return e.rtime, 0
	case e.utime == 0:
		return 0, e.rtime
	}
	kernel = mulDiv(e.stime, e.rtime, e.utime+e.stime)
	return e.rtime - kernel, kernel
}

// split is the last user/kernel split one reader (a handle, a sampler
// entry, a region) reported for its task, in nanoseconds.
type split struct {
	mu     sync.Mutex
	user   uint64
	kernel uint64
}

// adjust returns splitRule's answer for e, raised where needed so that
// neither part is below what s last returned, with the parts still adding
// up to e.rtime (the kernel's cputime_adjust clamps the same way). If
// e.rtime is not above the last total (an older reading raced a newer one),
// the last split is returned unchanged.
func (s *split) adjust(e evidence) (user, kernel uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user+s.kernel >= e.rtime {
		return s.user, s.kernel
	}
	user, kernel = splitRule(e)
	if kernel < s.kernel {
		kernel = s.kernel
		user = e.rtime - kernel
	}
	if user < s.user {
		user = s.user
		kernel = e.rtime - user
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
