package recorder

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestFinalTime(t *testing.T) {
	for _, c := range []struct {
		ts, count   uint64
		counted     bool
		bound, want uint64
	}{
		{1000, 5000, false, 4000, 1000}, // no whole count: the record alone
		{1000, 900, true, 4000, 1000},   // perf behind the record: the record
		{1000, 1500, true, 4000, 1500},  // the stretch after the last tick
		{1000, 9000, true, 4000, 5000},  // no more than since the last tick
	} {
		if got := finalTime(c.ts, c.count, c.counted, c.bound); got != c.want {
			t.Errorf("finalTime(%d, %d, %v, %d) = %d, want %d", c.ts, c.count, c.counted, c.bound, got, c.want)
		}
	}
}

// The jiffy grid read at one moment still holds later: the coarse clock's
// readings fall on it (within its handler's latency), and sinceTick of an
// instant is below a tick plus the slack.
func TestTickGrid(t *testing.T) {
	g := readTickGrid()
	if !g.ok {
		t.Skip("no tick grid here (nohz_full)")
	}
	if g.tick < uint64(time.Millisecond) || g.tick > uint64(10*time.Millisecond) {
		t.Fatalf("tick %v", time.Duration(g.tick))
	}
	late := 0
	for range 20 {
		time.Sleep(3 * time.Millisecond)
		var coarse, mono, boot unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &coarse)
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
		unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot)
		at := uint64(coarse.Nano() + boot.Nano() - mono.Nano())
		// The coarse reading is a tick's instant (plus its handler's
		// delay): just after a grid point.
		if d := (at + g.tick - g.phase) % g.tick; d > uint64(tickSlack) && d < g.tick-uint64(tickSlack) {
			late++
		}
		if s := g.sinceTick(at); s > g.tick+uint64(tickSlack) {
			t.Errorf("sinceTick %v above a tick and the slack", time.Duration(s))
		}
	}
	if late > 2 {
		t.Errorf("%d of 20 coarse readings off the grid (tick %v, phase %v)", late, time.Duration(g.tick), time.Duration(g.phase))
	}
}
