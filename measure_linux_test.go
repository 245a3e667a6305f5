package cputime_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// Measure against the thread's own CPU clock, read by the test through
// clock_gettime(CLOCK_THREAD_CPUTIME_ID) inside the region: the region
// contains those reads, so its total is at least their difference and
// exceeds it only by the few clock reads around them. (getrusage's
// RUSAGE_THREAD total would not do for this bound: it leaves out the
// current run since the last tick, so it lags by up to a tick.) The split
// is checked against getrusage, whose split is tick-sampled like ours.
func TestMeasureAgainstThreadClock(t *testing.T) {
	var c0, c1, u0, s0, u1, s1 time.Duration
	usage, err := cputime.Measure(func() {
		u0, s0 = rusage(unix.RUSAGE_THREAD)
		c0 = threadCPUClock()
		for range 20 {
			burnCPU(5 * time.Millisecond)
			readZero(8 << 20) // kernel time
		}
		c1 = threadCPUClock()
		u1, s1 = rusage(unix.RUSAGE_THREAD)
	})
	if err != nil {
		t.Fatal(err)
	}
	inner := c1 - c0
	if d := usage.Total() - inner; d < 0 || d > time.Millisecond {
		t.Errorf("Measure: %v, thread clock inside the region: %v (difference %v)", usage.Total(), inner, d)
	}
	// Both splits are tick-sampled; with 100 ms in the region they agree
	// within a few ticks (10 ms at most each, at HZ=100).
	const ticks = 3 * 10 * time.Millisecond
	if d := usage.Kernel - (s1 - s0); d.Abs() > ticks {
		t.Errorf("Measure kernel %v, rusage kernel %v", usage.Kernel, s1-s0)
	}
	if usage.User < 50*time.Millisecond || u1-u0 < 50*time.Millisecond {
		t.Errorf("Measure user %v, rusage user %v; the region burned 100 ms in user mode", usage.User, u1-u0)
	}
}

func threadCPUClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// Work that f hands to another goroutine is not counted.
func TestMeasureExcludesOtherGoroutines(t *testing.T) {
	u0, s0 := rusage(unix.RUSAGE_SELF)
	usage, err := cputime.Measure(func() {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // surely another thread: ours is taken
			burnCPU(50 * time.Millisecond)
			close(done)
		}()
		<-done
	})
	if err != nil {
		t.Fatal(err)
	}
	u1, s1 := rusage(unix.RUSAGE_SELF)
	if burned := u1 + s1 - u0 - s0; burned < 50*time.Millisecond {
		t.Fatalf("the process burned only %v", burned)
	}
	if usage.Total() > 10*time.Millisecond {
		t.Errorf("Measure counted %v of another goroutine's 50 ms", usage.Total())
	}
}

func TestRegionOnAnotherGoroutine(t *testing.T) {
	r, err := cputime.StartRegion()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, err := r.End()
		errc <- err
	}()
	if err := <-errc; !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("End on another goroutine: %v", err)
	}
	if _, err := r.End(); err != nil {
		t.Errorf("End on the right goroutine: %v", err)
	}
}

func TestMeasurePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("the panic was swallowed")
		}
	}()
	cputime.Measure(func() { panic("boom") })
}
