//go:build !windows

package jobtree

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"time"
)

// Supported says whether Start can run a command in a job here.
const Supported = false

// Tree is a job being watched: nothing outside Windows.
type Tree struct{}

// Start returns an error wrapping ErrNotSupported, without starting cmd.
func Start(cmd *exec.Cmd, strict bool) (*Tree, error) {
	return nil, fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)
}

// WaitEmpty waits for the job to empty.
func (*Tree) WaitEmpty(context.Context, time.Duration, bool) Wait { return Wait{} }

// Finish reads what the job saw.
func (*Tree) Finish() Result { return Result{} }

// Close releases the job's handles.
func (*Tree) Close() error { return nil }
