package engine

import (
	"testing"
	"time"
)

// ranSince proves a reading this thread's only where no successor could
// have run as long, and only if the clock moved.
func TestRanSince(t *testing.T) {
	ms := int64(time.Millisecond)
	th := new(Thread)
	if th.ranSince(uint64(10*ms), 5*ms) {
		t.Error("proof with nothing seen yet")
	}
	th.seenRTime.Store(10 * ms) // ran 10 ms by monotonic time 100 ms
	th.seenAt.Store(100 * ms)
	for _, c := range []struct {
		rtime, mono int64
		want        bool
		why         string
	}{
		{11 * ms, 101 * ms, true, "grew; a successor could have run 1 ms at most"},
		{10 * ms, 101 * ms, false, "did not grow: an exited main thread's clock stays readable"},
		{11 * ms, 106 * ms, false, "a successor could have run 6 ms: 10 ms is not more than 2×6+1"},
		{11 * ms, 99 * ms, false, "monotonic time before the last reading"},
		{9 * ms, 101 * ms, false, "below the last reading: another thread's clock"},
	} {
		if got := th.ranSince(uint64(c.rtime), c.mono); got != c.want {
			t.Errorf("rtime %v at %v: %v, want %v (%s)", time.Duration(c.rtime), time.Duration(c.mono), got, c.want, c.why)
		}
	}
}
