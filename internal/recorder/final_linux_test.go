package recorder

import (
	"runtime"
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
	a, b, c := &task{tid: 1}, &task{tid: 2}, &task{tid: 3}
	want := map[*task]uint64{a: 30, b: 40, c: 2500}
	ts := []*task{a, b, c}
	// Over the budget: the longest is cut to the level that fits.
	got := waterFill(ts, want, 170)
	if got[a] != 30 || got[b] != 40 || got[c] != 100 {
		t.Errorf("cut: %d %d %d, want 30 40 100", got[a], got[b], got[c])
	}
	got = waterFill(ts, want, 60)
	if got[a] != 20 || got[b] != 20 || got[c] != 20 {
		t.Errorf("cut all: %d %d %d, want 20 20 20", got[a], got[b], got[c])
	}
	// Under it: each its own and an equal share of the rest.
	got = waterFill(ts, want, 2600)
	if got[a] != 40 || got[b] != 50 || got[c] != 2510 {
		t.Errorf("share: %d %d %d, want 40 50 2510", got[a], got[b], got[c])
	}
}

// A reader thread niced for the recording gets the default priority back
// for its end (the kernel's own getpriority says so), where the process
// may raise it (root); elsewhere it stays niced and nothing fails.
func TestFullPriority(t *testing.T) {
	got := make(chan [2]int, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the niced thread ends with the goroutine
		tid := lowPriority()
		low, _ := unix.Getpriority(unix.PRIO_PROCESS, int(tid))
		fullPriority(tid)
		full, _ := unix.Getpriority(unix.PRIO_PROCESS, int(tid))
		got <- [2]int{low, full}
	}()
	// getpriority(2) returns 20 - nice.
	p := <-got
	if p[0] != 1 {
		t.Errorf("after lowPriority the thread's nice is %d, want 19", 20-p[0])
	}
	if unix.Geteuid() != 0 {
		t.Skipf("raising a priority needs CAP_SYS_NICE; not root (the nice stays %d)", 20-p[1])
	}
	if p[1] != 20 {
		t.Errorf("after fullPriority the thread's nice is %d, want 0", 20-p[1])
	}
}
