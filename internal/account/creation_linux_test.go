package account

import (
	"testing"
	"time"
)

// fakeClocks is a Source: CLOCK_MONOTONIC advances by step per reading;
// REALTIME and BOOTTIME are it plus offsets the test sets, and delay, if
// set, stretches the next bracket (a preempted reading) and skews it (a
// reading taken while the thread was off the CPU).
type fakeClocks struct {
	mono, step       int64
	wallOff, bootOff int64
	delays           []int64 // added to the clock between b1 and now, one per reading
	inBracket        bool
}

func (f *fakeClocks) Now() (int64, int64) {
	f.mono += f.step
	if f.inBracket && len(f.delays) > 0 {
		f.mono += f.delays[0] // preempted between the first BOOTTIME and here
		f.delays = f.delays[1:]
	}
	return f.mono + f.wallOff, f.mono
}

func (f *fakeClocks) Boottime() int64 {
	f.mono += f.step
	f.inBracket = !f.inBracket
	return f.mono + f.bootOff
}

func TestBootOffsetStableAndStepped(t *testing.T) {
	t.Parallel()
	f := &fakeClocks{mono: 1e12, step: 500, wallOff: 1_700_000_000e9, bootOff: 5e9}
	c := NewClocks(f)
	want := f.wallOff - f.bootOff
	first := c.BootOffset()
	if d := first - want; d > 1000 || d < -1000 {
		t.Fatalf("offset %d, want %d ± 1 µs", first, want)
	}
	// Queries in the next second cost no system call and return the same.
	for range 100 {
		if got := c.BootOffset(); got != first {
			t.Fatalf("offset moved from %d to %d without a step", first, got)
		}
	}
	// A second later the check reads the clocks again: every reading is
	// preempted for 3 ms between its two BOOTTIME reads but one: the
	// narrowest is kept, and the offset does not move.
	f.mono += 2e9
	f.delays = []int64{3e6, 3e6, 3e6, 3e6, 0, 3e6}
	if got := c.BootOffset(); got != first {
		t.Errorf("a disturbed check moved the offset by %v", time.Duration(got-first))
	}
	// Every reading of one check disturbed (up to 10 tries): kept, since the
	// second reading, disturbed differently, does not confirm it.
	f.mono += 2e9
	f.delays = []int64{4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 4e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}
	if got := c.BootOffset(); got != first {
		t.Errorf("an unconfirmed change moved the offset by %v", time.Duration(got-first))
	}
	f.delays = nil
	// The wall clock is stepped by 2 s: the cheap check sees it at once,
	// two readings confirm it, and the offset follows.
	f.wallOff += 2e9
	if got := c.BootOffset(); got-(first+2e9) > 1000 || got-(first+2e9) < -1000 {
		t.Errorf("after a 2 s step: offset %d, want %d", got, first+2e9)
	}
	// A resume from a 30 s suspend moves BOOTTIME away from MONOTONIC:
	// seen at the next once-a-second check.
	f.bootOff += 30e9
	f.mono += 2e9
	if got := c.BootOffset(); got-(first+2e9-30e9) > 1000 || got-(first+2e9-30e9) < -1000 {
		t.Errorf("after a suspend: offset %d, want %d", got, first+2e9-30e9)
	}
}

func TestCheckRuntimeAndStart(t *testing.T) {
	t.Parallel()
	off := BootOffset()
	wall, _ := System.now()
	upTicks := uint64(wall-off) / (1e9 / UserHZ())
	if err := System.CheckStart(upTicks+1000, off); err == nil {
		t.Error("a start 10 s in the future passed")
	}
	if err := System.CheckStart(upTicks-1, off); err != nil {
		t.Errorf("a start a tick ago: %v", err)
	}
	if err := System.CheckRuntime(1<<64-1, 0, false, off); err == nil {
		t.Error("a runtime of 2^64-1 ns passed")
	}
	if err := System.CheckRuntime(1<<64-1, 0, true, off); err == nil {
		t.Error("a process runtime of 2^64-1 ns passed")
	}
	if err := System.CheckRuntime(uint64(time.Second), upTicks-200, false, off); err != nil {
		t.Errorf("1 s of CPU in a thread 2 s old: %v", err)
	}
	if err := System.CheckRuntime(uint64(3*time.Second), upTicks-100, false, off); err == nil {
		t.Error("3 s of CPU in a thread 1 s old passed")
	}
	if err := CheckTicks(Evidence{UTime: 1 << 63, STime: 1 << 63}); err == nil {
		t.Error("overflowing ticks passed")
	}
}

// TestKeptOffsetSeesStep: KeptOffset answers from the kept offset, and a
// step is seen by the next BootOffset or within keptCheckEvery calls.
func TestKeptOffsetSeesStep(t *testing.T) {
	t.Parallel()
	f := &fakeClocks{mono: 1e12, step: 500, wallOff: 1_700_000_000e9, bootOff: 5e9}
	c := NewClocks(f)
	first := c.BootOffset()
	f.wallOff += 2e9
	moved := -1
	for i := range keptCheckEvery {
		if c.KeptOffset() != first {
			moved = i
			break
		}
	}
	if moved < 0 {
		t.Fatalf("%d calls after a 2 s step, KeptOffset still %d", keptCheckEvery, first)
	}
	if got := c.KeptOffset(); got-(first+2e9) > 1000 || got-(first+2e9) < -1000 {
		t.Errorf("after the step: %d, want %d", got, first+2e9)
	}
}
