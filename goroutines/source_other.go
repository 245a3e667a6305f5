//go:build !linux

package goroutines

import (
	"fmt"
	"runtime"
	"time"
)

func monoNow() int64 { return time.Now().UnixNano() }

func openSource(*engine) (cpuSource, error) {
	return nil, fmt.Errorf("recording goroutine CPU time on %s is unfinished: %w", runtime.GOOS, ErrNotSupported)
}

func openWatchSource(*engine) (cpuSource, error) {
	return nil, fmt.Errorf("watching goroutine CPU time on %s is unfinished: %w", runtime.GOOS, ErrNotSupported)
}
