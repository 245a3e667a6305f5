package engine

import (
	"sync/atomic"
	"time"
)

// runProof proves, with no system call, that a reading of a thread's CPU
// clock by id was that thread's: CurrentThread's entries (ownThread) and
// own-process thread handles (Thread) keep one. It holds the thread's run
// time and the monotonic time just after it was read, at the last reading
// known to be the thread's. A thread that took the id after this one
// exited was born after seenAt, so it cannot have run for longer than
// mono-seenAt; where this thread had already run for more than twice that
// (plus 1 ms: the scheduler's clock and CLOCK_MONOTONIC may run at rates
// that NTP's slew sets apart by up to 500 ppm), a reading at or above
// seenRTime is this thread's. That holds for a thread read often; other
// reads fall back to the thread's pidfd.
type runProof struct {
	seenRTime, seenAt atomic.Int64
}

// proves reports whether a reading of rtime at monotonic time mono (read
// after the clock) was the thread's. With grew, it must also be above the
// last: a main thread that exited while others run keeps a readable clock
// that no longer moves, and only the pidfd tells that it has exited; the
// calling thread reading itself needs no such proof of life.
func (p *runProof) proves(rtime uint64, mono int64, grew bool) bool {
	seenR, at := p.seenRTime.Load(), p.seenAt.Load()
	el := mono - at
	if at == 0 || el < 0 || int64(rtime) < seenR || grew && int64(rtime) == seenR {
		return false
	}
	return seenR > 2*el+int64(time.Millisecond)
}

// saw records a reading known to be the thread's: run time rtime by
// monotonic time mono.
func (p *runProof) saw(rtime uint64, mono int64) {
	p.seenRTime.Store(int64(rtime))
	p.seenAt.Store(mono)
}
