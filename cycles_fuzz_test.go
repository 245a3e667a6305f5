package cputime

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// ns → cycles: exactly ⌊ns × hz / 1e9⌋ (checked with math/big), saturated
// at 2^64-1, never overflowing, and monotonic in ns.
func FuzzCyclesFromNanos(f *testing.F) {
	for _, seed := range [][2]uint64{
		{0, 0}, {1, 1e9}, {1e9, 2596138000}, {math.MaxInt64, 2596138000},
		{math.MaxUint64, math.MaxUint64}, {math.MaxUint64, 1e9}, {math.MaxUint64, 1e9 - 1},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, ns, hz uint64) {
		got := cyclesFromNanos(ns, hz)
		want := new(big.Int).Mul(new(big.Int).SetUint64(ns), new(big.Int).SetUint64(hz))
		want.Quo(want, big.NewInt(1e9))
		if !want.IsUint64() {
			if got != math.MaxUint64 {
				t.Fatalf("cyclesFromNanos(%d, %d) = %d, want saturation", ns, hz, got)
			}
		} else if got != want.Uint64() {
			t.Fatalf("cyclesFromNanos(%d, %d) = %d, want %s", ns, hz, got, want)
		}
		if ns < math.MaxUint64 {
			if next := cyclesFromNanos(ns+1, hz); next < got {
				t.Fatalf("cyclesFromNanos(%d, %d) = %d < %d at one ns less", ns+1, hz, next, got)
			}
		}
		d := time.Duration(ns)
		c := CycleFrequency{Hz: hz}.Cycles(d)
		switch {
		case d <= 0 && c != 0:
			t.Fatalf("Cycles(%v) = %d, want 0", d, c)
		case d > 0 && c != got:
			t.Fatalf("Cycles(%v) = %d, want %d", d, c, got)
		}
	})
}

// Scaling a multiplexed count: Raw × Enabled / Running, exact, saturated.
func FuzzScaleCount(f *testing.F) {
	f.Add(uint64(1000), uint64(10), uint64(5))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(1))
	f.Add(uint64(7), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, raw, enabled, running uint64) {
		c := scaleCount(raw, enabled, running)
		if c.Raw != raw {
			t.Fatalf("Raw %d, want %d", c.Raw, raw)
		}
		if running == 0 || running >= enabled {
			if c.Cycles != raw || c.Scaled() && running != 0 {
				t.Fatalf("scaleCount(%d, %d, %d) = %+v, want unscaled", raw, enabled, running, c)
			}
			return
		}
		want := new(big.Int).Mul(new(big.Int).SetUint64(raw), new(big.Int).SetUint64(enabled))
		want.Quo(want, new(big.Int).SetUint64(running))
		if want.IsUint64() && c.Cycles != want.Uint64() || !want.IsUint64() && c.Cycles != math.MaxUint64 || c.Cycles < raw {
			t.Fatalf("scaleCount(%d, %d, %d) = %d, want %s", raw, enabled, running, c.Cycles, want)
		}
	})
}
