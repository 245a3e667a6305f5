//go:build !linux && !windows

package goroutines

import (
	"fmt"
	"runtime"
	"time"
)

func monoNow() int64 { return time.Now().UnixNano() }

func openSource(*engine) (cpuSource, error) {
	return nil, fmt.Errorf("recording goroutine CPU time on %s: %w (the package reads thread CPU times on Linux and Windows)", runtime.GOOS, ErrNotSupported)
}

func openWatchSource(*engine) (cpuSource, error) {
	return nil, fmt.Errorf("watching goroutine CPU time on %s: %w (the package reads thread CPU times on Linux and Windows)", runtime.GOOS, ErrNotSupported)
}

// threadClocks: the package reads no thread clocks on this system.
type threadClocks struct{}

func (threadClocks) list() ([]int, error)          { return nil, ErrNotSupported }
func (threadClocks) read(int) (int64, bool, error) { return 0, true, ErrNotSupported }
func (threadClocks) forget(int)                    {}
func (threadClocks) close()                        {}
