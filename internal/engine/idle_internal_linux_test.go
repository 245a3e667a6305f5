package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cputime/cputime/internal/procfs"
)

const ms = 1_000_000

// A CPU's life as the two sources see it: the residency r moves only at
// wake-ups, /proc/stat's s moves continuously but in ticks, and the two
// drift apart. The merged value must follow the sleep in progress, never
// count a sleep twice when the residency catches up, stay within a tick
// below s, and never go back.
func TestIdleMerge(t *testing.T) {
	t.Parallel()
	const ahead = 3500 * ms // the residency ahead of /proc/stat, as measured on a KVM guest
	type read struct {
		name string
		r, s uint64 // s is the true idle time truncated to the tick
		lo   uint64 // the value must be at least this
		hi   uint64 // and at most this
	}
	base := uint64(5000_000 * ms)
	trunc := func(ns uint64) uint64 { return ns / tickNanos * tickNanos }
	reads := []read{
		// First read: the CPU has been asleep for 400 ms, which the
		// residency does not show; /proc/stat does.
		{"asleep at the first read", base - 400*ms + ahead, trunc(base), trunc(base) - tickNanos, trunc(base)},
		// Still asleep a second later: the residency has not moved.
		{"still asleep", base - 400*ms + ahead, trunc(base + 1000*ms), trunc(base+1000*ms) - tickNanos, trunc(base + 1000*ms)},
		// Woke up: the residency takes in the whole sleep, 1.4 s. The
		// value must not jump by it again.
		{"awake", base + 1003*ms + ahead, trunc(base + 1003*ms), trunc(base+1003*ms) - tickNanos, trunc(base + 1003*ms)},
		// Awake, busy for a while, then 3 ms more idle: µs steps.
		{"µs steps", base + 1006*ms + ahead + 1234, trunc(base + 1006*ms + 1234), base + 1006*ms - tickNanos, trunc(base + 1006*ms + 1234)},
		// The residency drifts further ahead (r grows 1 ms more than s).
		{"drift", base + 1507*ms + ahead, trunc(base + 1506*ms), trunc(base+1506*ms) - tickNanos, trunc(base + 1506*ms)},
	}
	var c idleCPU
	var prev uint64
	for _, rd := range reads {
		v := c.merge(true, rd.r, rd.s)
		if v < rd.lo || v > rd.hi {
			t.Errorf("%s: merge(r=%d, s=%d) = %d, want in [%d, %d]", rd.name, rd.r, rd.s, v, rd.lo, rd.hi)
		}
		if v < prev {
			t.Errorf("%s: %d after %d", rd.name, v, prev)
		}
		prev = v
	}
	// Offline: not in /proc/stat, its states gone: the last value stands.
	if v := c.merge(true, 0, 0); v != prev {
		t.Errorf("offline: %d, want the last value %d", v, prev)
	}
	// A CPU with no cpuidle states is /proc/stat itself.
	var p idleCPU
	if v := p.merge(false, 0, 70*tickNanos); v != 70*tickNanos {
		t.Errorf("/proc/stat only: %d, want %d", v, 70*tickNanos)
	}
	if v := p.merge(false, 0, 0); v != 70*tickNanos {
		t.Errorf("/proc/stat only, offline: %d, want %d", v, 70*tickNanos)
	}
}

// The layout read from a fixture tree: CPU 0 with two cpuidle states, CPU 1
// listed in /proc/stat only once its states vanish, CPU 2 offline; a
// malformed residency file is an error that says which file.
func TestIdleLayoutFixture(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sys := filepath.Join(root, "sys")
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sys, "present"), "0-2\n")
	write(filepath.Join(sys, "cpuidle", "current_driver"), "haltpoll\n")
	for cpu, times := range map[string][2]string{"cpu0": {"9500", "2000000"}, "cpu1": {"5", "6"}} {
		write(filepath.Join(sys, cpu, "cpuidle", "state0", "time"), times[0]+"\n")
		write(filepath.Join(sys, cpu, "cpuidle", "state1", "time"), times[1]+"\n")
	}
	proc := filepath.Join(root, "proc")
	write(filepath.Join(proc, "stat"), "cpu  10 0 10 700 5 0 0 0 0 0\ncpu0 5 0 5 200 0 0 0 0 0 0\ncpu1 5 0 5 500 5 0 0 0 0 0\nbtime 1\n")
	l, err := newIdleLayout(sys)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.appendNanos(nil, procfs.NewFS(proc))
	if err != nil {
		t.Fatal(err)
	}
	// CPU 0: the first read is /proc/stat's 2 s (its residency, 2.0095 s,
	// is ahead: the two drift apart); CPU 1 likewise (5.05 s), its
	// residency far behind; CPU 2 offline from the start: 0.
	want := []uint64{2000 * ms, 5050 * ms, 0}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("first read: %v, want %v", got, want)
	}
	// CPU 0 idle 1.5 ms more, and /proc/stat's truncation lets one tick
	// through: the value moves by the residency's 1.5 ms, not the tick.
	// CPU 1's states vanish: /proc/stat alone.
	write(filepath.Join(sys, "cpu0", "cpuidle", "state1", "time"), "2001500\n")
	os.RemoveAll(filepath.Join(sys, "cpu1", "cpuidle"))
	write(filepath.Join(proc, "stat"), "cpu  10 0 10 712 5 0 0 0 0 0\ncpu0 5 0 5 201 0 0 0 0 0 0\ncpu1 5 0 5 511 5 0 0 0 0 0\nbtime 1\n")
	got, err = l.appendNanos(got[:0], procfs.NewFS(proc))
	if err != nil {
		t.Fatal(err)
	}
	want = []uint64{2001500 * 1000, 5160 * ms, 0}
	if got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("second read: %v, want %v", got, want)
	}
	write(filepath.Join(sys, "cpu0", "cpuidle", "state0", "time"), "12x\n")
	if _, err := l.appendNanos(nil, procfs.NewFS(proc)); err == nil {
		t.Fatal("a malformed residency file gave no error")
	} else if !errors.Is(err, procfs.ErrFileParse) {
		t.Fatalf("malformed residency: %v does not wrap ErrFileParse", err)
	}
}
