package sampler_test

import (
	"os"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/sampler"
)

// TestOwnProcessDelta runs everywhere (Linux, Windows): the process burns
// CPU between two refreshes, and the sampler's Delta for it agrees with
// what CurrentProcess().Times() says it burnt, read around the burn.
func TestOwnProcessDelta(t *testing.T) {
	s, err := sampler.New(sampler.Options{PIDs: []int{os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if !first.First || len(first.Processes) != 1 || first.Processes[0].PID != os.Getpid() {
		t.Fatalf("first refresh: %+v", first)
	}
	before, err := cputime.CurrentProcess().Times()
	if err != nil {
		t.Fatal(err)
	}
	for {
		now, err := cputime.CurrentProcess().Times()
		if err != nil {
			t.Fatal(err)
		}
		if now.Total()-before.Total() >= 100*time.Millisecond {
			break
		}
	}
	after, _ := cputime.CurrentProcess().Times()
	second, err := s.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if second.First || len(second.Processes) != 1 {
		t.Fatalf("second refresh: %+v", second)
	}
	p := second.Processes[0]
	burnt := after.Total() - before.Total()
	// The refreshes themselves and the runtime's other threads add a
	// little; Windows counts in 15.6 ms ticks (Wine: 10 ms).
	if p.Delta < burnt-40*time.Millisecond || p.Delta > burnt+100*time.Millisecond {
		t.Errorf("Delta %v; the process burnt %v between the refreshes", p.Delta, burnt)
	}
	if p.Times.Creation.IsZero() || p.Times.Creation.After(second.Time) || p.New {
		t.Errorf("creation %v (refresh at %v), new %v", p.Times.Creation, second.Time, p.New)
	}
	if second.Interval <= 0 {
		t.Errorf("interval %v", second.Interval)
	}
}
