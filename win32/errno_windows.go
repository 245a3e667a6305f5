package win32

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// Errno is a Win32 error code. On Windows it is syscall.Errno itself, the
// type of every error golang.org/x/sys/windows returns, so errors from the
// two packages compare equal and match fs.ErrPermission and
// errors.ErrUnsupported as syscall.Errno does.
type Errno = syscall.Errno

// Win32 error codes, the values golang.org/x/sys/windows declares.
const (
	ERROR_FILE_NOT_FOUND       = windows.ERROR_FILE_NOT_FOUND
	ERROR_TOO_MANY_OPEN_FILES  = windows.ERROR_TOO_MANY_OPEN_FILES
	ERROR_ACCESS_DENIED        = windows.ERROR_ACCESS_DENIED
	ERROR_INVALID_HANDLE       = windows.ERROR_INVALID_HANDLE
	ERROR_NOT_ENOUGH_MEMORY    = windows.ERROR_NOT_ENOUGH_MEMORY
	ERROR_NO_MORE_FILES        = windows.ERROR_NO_MORE_FILES
	ERROR_BAD_LENGTH           = windows.ERROR_BAD_LENGTH
	ERROR_GEN_FAILURE          = windows.ERROR_GEN_FAILURE
	ERROR_NOT_SUPPORTED        = windows.ERROR_NOT_SUPPORTED
	ERROR_INVALID_PARAMETER    = windows.ERROR_INVALID_PARAMETER
	ERROR_CALL_NOT_IMPLEMENTED = windows.ERROR_CALL_NOT_IMPLEMENTED
	ERROR_INSUFFICIENT_BUFFER  = windows.ERROR_INSUFFICIENT_BUFFER
	ERROR_NOACCESS             = windows.ERROR_NOACCESS
)
