package cputime

import "github.com/cputime/cputime/internal/engine"

// Sentinel errors (defined in the engine, internal/engine, whose errors wrap
// them). Every error returned by this package wraps at most one of
// them, with context ("reading thread 1234 of process 99: ..."), so callers
// test with errors.Is rather than comparing strings.
var (
	// ErrNotFound: no such process or thread, or it exited and its
	// accounting is gone (Win32: ERROR_INVALID_PARAMETER from OpenProcess).
	ErrNotFound = engine.ErrNotFound

	// ErrAccessDenied: the task exists but this caller may not read it
	// (Win32: ERROR_ACCESS_DENIED).
	ErrAccessDenied = engine.ErrAccessDenied

	// ErrNotSupported: this platform or kernel cannot answer the query. The
	// wrapping error says which platform or kernel feature is missing.
	ErrNotSupported = engine.ErrNotSupported

	// ErrInvalidArgument: an id, time or field value outside its valid
	// range, such as a zero PID, a FILETIME at or above 2^63 given to
	// SystemTime, or February 29 of a common year (Win32:
	// ERROR_INVALID_PARAMETER).
	ErrInvalidArgument = engine.ErrInvalidArgument

	// ErrInvalidData: the system reported something it could not have
	// produced: a malformed /proc file, a CPU time beyond the time since the
	// task started, a start time after now. It fails that one read; nothing
	// of it is kept.
	ErrInvalidData = engine.ErrInvalidData

	// ErrClosed: the handle was closed (Win32: ERROR_INVALID_HANDLE).
	ErrClosed = engine.ErrClosed
)
