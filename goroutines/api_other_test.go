//go:build !linux && !windows

package goroutines

import (
	"errors"
	"runtime/trace"
	"testing"
)

func TestStartNotSupported(t *testing.T) {
	rec, err := Start()
	if err == nil {
		rec.Stop()
		t.Fatal("Start succeeded on a platform the package does not support yet")
	}
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("error %v, want ErrNotSupported", err)
	}
}

// Watch says so too, and leaves the flight recorder and the Watcher slot
// free: a program that serves without it can trace.
func TestWatchNotSupported(t *testing.T) {
	w, err := Watch()
	if err == nil {
		w.Close()
		t.Fatal("Watch succeeded on a platform the package does not support yet")
	}
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("error %v, want ErrNotSupported", err)
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{})
	if err := fr.Start(); err != nil {
		t.Errorf("a flight recorder after the failed Watch: %v", err)
	}
	fr.Stop()
	if _, err := Watch(); errors.Is(err, ErrWatching) {
		t.Errorf("a second Watch: %v, want ErrNotSupported again", err)
	}
}
