package recorder

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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

func TestWaterFill(t *testing.T) {
	want := []uint64{30, 40, 2500}
	for _, c := range []struct {
		budget uint64
		want   []uint64
	}{
		{170, []uint64{30, 40, 100}},   // over the budget: the longest is cut to the level that fits
		{60, []uint64{20, 20, 20}},     // all cut
		{2600, []uint64{40, 50, 2510}}, // under it: each its own and an equal share of the rest
		{2570, []uint64{30, 40, 2500}}, // exactly
	} {
		if got := waterFill(want, c.budget); !slices.Equal(got, c.want) {
			t.Errorf("waterFill(%v, %d) = %v, want %v", want, c.budget, got, c.want)
		}
	}
	// The order of the wants is the shares' whatever it is.
	if got := waterFill([]uint64{2500, 30, 40}, 170); !slices.Equal(got, []uint64{100, 30, 40}) {
		t.Errorf("unsorted wants: %v, want [100 30 40]", got)
	}
}

// BenchmarkWaterFill shares the stretches of 60,000 threads (caps up to a
// tick, the budget half their sum), as fitTop does at the end of a
// recording while the user waits.
func BenchmarkWaterFill(b *testing.B) {
	caps := make([]uint64, 60000)
	var sum uint64
	x := uint64(88172645463325252)
	for i := range caps {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		caps[i] = x % 4_000_000
		sum += caps[i]
	}
	b.ReportAllocs()
	for b.Loop() {
		waterFill(caps, sum/2)
	}
}
