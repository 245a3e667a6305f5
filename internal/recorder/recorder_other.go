//go:build !linux

package recorder

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/cputime/cputime/internal/timeline"
)

// Recorder is a recording in progress.
type Recorder struct{}

// Start starts cmd and records its tree: not supported outside Linux.
func Start(cmd *exec.Cmd, _ ...Options) (*Recorder, error) {
	return nil, fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)
}

// Stop ends the recording.
func (*Recorder) Stop() (*timeline.Recording, Stats, error) {
	return nil, Stats{}, fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)
}

// Close releases the recording's resources.
func (*Recorder) Close() error { return nil }
