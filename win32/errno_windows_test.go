package win32_test

import (
	"syscall"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/win32"
)

// On Windows the errors are syscall.Errno, the very values of x/sys/windows.
func TestErrnoIsSyscallErrno(t *testing.T) {
	var e syscall.Errno = win32.ERROR_ACCESS_DENIED
	if e != windows.ERROR_ACCESS_DENIED || win32.ERROR_NO_MORE_FILES != windows.ERROR_NO_MORE_FILES {
		t.Error("win32 and x/sys/windows error values differ")
	}
	_, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, 0)
	if _, ok := err.(syscall.Errno); !ok || err != windows.ERROR_INVALID_PARAMETER {
		t.Errorf("OpenProcess(0) = %T %v; want syscall.Errno ERROR_INVALID_PARAMETER", err, err)
	}
	// Types are the x/sys/windows ones.
	var ft windows.Filetime = win32.NsecToFiletime(0)
	var h windows.Handle = win32.CurrentProcess()
	_, _ = ft, h
}
