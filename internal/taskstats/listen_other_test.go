//go:build !linux

package taskstats

import (
	"errors"
	"testing"
)

func TestNotSupported(t *testing.T) {
	if _, err := Listen(Options{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Listen: %v, want ErrNotSupported", err)
	}
	if _, err := Query(Process, 1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Query: %v, want ErrNotSupported", err)
	}
	if err := Check(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Check: %v, want ErrNotSupported", err)
	}
}
