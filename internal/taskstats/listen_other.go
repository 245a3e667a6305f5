//go:build !linux

package taskstats

import (
	"context"
	"fmt"
	"runtime"
)

// Listener is not available on this system.
type Listener struct{}

func notSupported() error {
	return fmt.Errorf("%w on %s: it is a Linux interface", ErrNotSupported, runtime.GOOS)
}

// Check reports whether exit records can be had here: never, off Linux.
func Check() error { return notSupported() }

// Listen fails with ErrNotSupported off Linux.
func Listen(Options) (*Listener, error) { return nil, notSupported() }

// Next fails with ErrNotSupported off Linux.
func (*Listener) Next(context.Context) (Batch, error) { return Batch{}, notSupported() }

// Dropped fails with ErrNotSupported off Linux.
func (*Listener) Dropped() (uint64, error) { return 0, notSupported() }

// Close does nothing off Linux.
func (*Listener) Close() error { return nil }

// Query fails with ErrNotSupported off Linux.
func Query(Kind, int) (Record, error) { return Record{}, notSupported() }
