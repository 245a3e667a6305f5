//go:build !windows

package jobtree

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Supported says whether Start can run a command in a job here.
const Supported = false

// Tree is a job being watched: nothing outside Windows.
type Tree struct{}

// Start returns an error wrapping ErrNotSupported, without starting cmd.
func Start(cmd *exec.Cmd, strict bool) (*Tree, error) {
	return nil, fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)
}

// Finish reads what the job saw.
func (*Tree) Finish() Result { return Result{} }

// Close releases the job's handles.
func (*Tree) Close() error { return nil }
