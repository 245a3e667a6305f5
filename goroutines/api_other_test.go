//go:build !linux

package goroutines

import (
	"errors"
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
