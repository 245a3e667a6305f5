package cputime

import (
	"errors"
	"strings"
	"syscall"
)

// Sentinel errors. Every error returned by this package wraps at most one of
// them, with context ("reading thread 1234 of process 99: ..."), so callers
// test with errors.Is rather than comparing strings.
var (
	// ErrNotFound: no such process or thread, or it exited and its
	// accounting is gone (Win32: ERROR_INVALID_PARAMETER from OpenProcess).
	ErrNotFound = errors.New("no such process or thread")

	// ErrAccessDenied: the task exists but this caller may not read it
	// (Win32: ERROR_ACCESS_DENIED).
	ErrAccessDenied = errors.New("access denied")

	// ErrNotSupported: this platform or kernel cannot answer the query. The
	// wrapping error says which platform or kernel feature is missing.
	ErrNotSupported = errors.New("not supported")

	// ErrInvalidArgument: an id, time or field value outside its valid
	// range, such as a zero PID, a FILETIME at or above 2^63 given to
	// SystemTime, or February 29 of a common year (Win32:
	// ERROR_INVALID_PARAMETER).
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrInvalidData: the system reported something it could not have
	// produced: a malformed /proc file, a CPU time beyond the time since the
	// task started, a start time after now. It fails that one read; nothing
	// of it is kept.
	ErrInvalidData = errors.New("invalid data from the system")

	// ErrClosed: the handle was closed (Win32: ERROR_INVALID_HANDLE).
	ErrClosed = errors.New("handle closed")
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
