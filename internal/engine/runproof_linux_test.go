package engine

import (
	"testing"
	"time"
)

// runProof proves a reading this thread's only where no successor could
// have run as long, and only if the clock moved.
func TestRunProof(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	var th runProof
	if th.proves(uint64(10*ms), 5*ms, true) {
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
		if got := th.proves(uint64(c.rtime), c.mono, true); got != c.want {
			t.Errorf("rtime %v at %v: %v, want %v (%s)", time.Duration(c.rtime), time.Duration(c.mono), got, c.want, c.why)
		}
	}
}

// Without growth asked for (the calling thread reading itself), an
// unmoved reading is proven too; the rest of the rule is the same.
func TestRunProofSelf(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	var p runProof
	p.saw(uint64(10*ms), 100*ms)
	if !p.proves(uint64(10*ms), 101*ms, false) {
		t.Error("an unmoved reading of the calling thread itself not proven")
	}
	if p.proves(uint64(10*ms), 106*ms, false) {
		t.Error("proven where a successor could have run 6 ms")
	}
}
