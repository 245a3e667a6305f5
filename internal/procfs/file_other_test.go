//go:build !linux

package procfs

import (
	"errors"
	"testing"
)

func TestOpenFileUnsupported(t *testing.T) {
	if _, err := OpenFile("stat"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("OpenFile: %v, want errors.ErrUnsupported", err)
	}
}
