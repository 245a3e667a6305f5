//go:build !windows

package win32

import (
	"errors"
	"io/fs"
	"strconv"

	"github.com/cputime/cputime"
)

// Errno is a Win32 error code, the type of every error this package
// returns. It behaves as syscall.Errno does on Windows: values compare with
// ==, Error returns the Windows message text, and errors.Is matches
// ERROR_ACCESS_DENIED with fs.ErrPermission, ERROR_FILE_NOT_FOUND with
// fs.ErrNotExist, and ERROR_CALL_NOT_IMPLEMENTED and ERROR_NOT_SUPPORTED
// with errors.ErrUnsupported. It also matches the sentinel errors of the
// cputime package, which the calls here are built on:
//
//	ERROR_ACCESS_DENIED         cputime.ErrAccessDenied
//	ERROR_INVALID_HANDLE        cputime.ErrClosed
//	ERROR_INVALID_PARAMETER     cputime.ErrInvalidArgument and cputime.ErrNotFound
//	ERROR_CALL_NOT_IMPLEMENTED  cputime.ErrNotSupported
//	ERROR_NOT_SUPPORTED         cputime.ErrNotSupported
//
// ERROR_INVALID_PARAMETER matches both ErrInvalidArgument and ErrNotFound
// because Windows answers 87 for both: OpenProcess of a process that does
// not exist fails with it.
type Errno uintptr

// Win32 error codes, with the values of winerror.h.
const (
	ERROR_FILE_NOT_FOUND       Errno = 2
	ERROR_TOO_MANY_OPEN_FILES  Errno = 4
	ERROR_ACCESS_DENIED        Errno = 5
	ERROR_INVALID_HANDLE       Errno = 6
	ERROR_NOT_ENOUGH_MEMORY    Errno = 8
	ERROR_NO_MORE_FILES        Errno = 18
	ERROR_BAD_LENGTH           Errno = 24
	ERROR_GEN_FAILURE          Errno = 31
	ERROR_NOT_SUPPORTED        Errno = 50
	ERROR_INVALID_PARAMETER    Errno = 87
	ERROR_CALL_NOT_IMPLEMENTED Errno = 120
	ERROR_INSUFFICIENT_BUFFER  Errno = 122
	ERROR_NOACCESS             Errno = 998
)

// errnoText holds the message texts of English Windows (FormatMessage with
// FORMAT_MESSAGE_FROM_SYSTEM, trailing CR LF removed, as syscall.Errno's
// Error does on Windows).
var errnoText = map[Errno]string{
	ERROR_FILE_NOT_FOUND:       "The system cannot find the file specified.",
	ERROR_TOO_MANY_OPEN_FILES:  "The system cannot open the file.",
	ERROR_ACCESS_DENIED:        "Access is denied.",
	ERROR_INVALID_HANDLE:       "The handle is invalid.",
	ERROR_NOT_ENOUGH_MEMORY:    "Not enough memory resources are available to process this command.",
	ERROR_NO_MORE_FILES:        "There are no more files.",
	ERROR_BAD_LENGTH:           "The program issued a command but the command length is incorrect.",
	ERROR_GEN_FAILURE:          "A device attached to the system is not functioning.",
	ERROR_NOT_SUPPORTED:        "The request is not supported.",
	ERROR_INVALID_PARAMETER:    "The parameter is incorrect.",
	ERROR_CALL_NOT_IMPLEMENTED: "This function is not supported on this system.",
	ERROR_INSUFFICIENT_BUFFER:  "The data area passed to a system call is too small.",
	ERROR_NOACCESS:             "Invalid access to memory location.",
}

// Error returns the Windows message text of e, or "winapi error #N" for a
// code without one here, as syscall.Errno does on Windows when
// FormatMessage knows no text.
func (e Errno) Error() string {
	if s, ok := errnoText[e]; ok {
		return s
	}
	return "winapi error #" + strconv.FormatUint(uint64(e), 10)
}

// Is reports whether e matches target, as described at Errno.
func (e Errno) Is(target error) bool {
	switch target {
	case cputime.ErrAccessDenied, fs.ErrPermission:
		return e == ERROR_ACCESS_DENIED
	case cputime.ErrClosed:
		return e == ERROR_INVALID_HANDLE
	case cputime.ErrInvalidArgument, cputime.ErrNotFound:
		return e == ERROR_INVALID_PARAMETER
	case cputime.ErrNotSupported, errors.ErrUnsupported:
		return e == ERROR_CALL_NOT_IMPLEMENTED || e == ERROR_NOT_SUPPORTED
	case fs.ErrNotExist:
		return e == ERROR_FILE_NOT_FOUND
	}
	return false
}
