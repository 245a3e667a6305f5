package engine

import (
	"errors"
	"strings"
	"syscall"
)

// The sentinel errors of package cputime, which documents them. They live
// here so that the engine's errors wrap them without importing the API.
var (
	ErrNotFound        = errors.New("no such process or thread")
	ErrAccessDenied    = errors.New("access denied")
	ErrNotSupported    = errors.New("not supported")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrInvalidData     = errors.New("invalid data from the system")
	ErrClosed          = errors.New("handle closed")
)

// kindError files a system error under one of the sentinels. It reads as its
// context and its cause, each once: where the system's own words end the
// message ("open /proc/42/stat: no such file or directory"), the sentinel's
// replace them ("open /proc/42/stat: no such process or thread"), so the
// cause is not said twice in different words. errors.Is matches both the
// sentinel and the system error (the syscall.Errno) it wraps.
type kindError struct {
	kind error // one of the sentinels
	err  error // the system's error, with its context
}

func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

func (e *kindError) Error() string {
	msg := e.err.Error()
	var errno syscall.Errno
	if errors.As(e.err, &errno) {
		if head, ok := strings.CutSuffix(msg, errno.Error()); ok {
			return head + e.kind.Error()
		}
	}
	return e.kind.Error() + ": " + msg
}
