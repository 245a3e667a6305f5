package win32_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/cputime/cputime/win32"
)

func TestErrnoValues(t *testing.T) {
	for _, tc := range []struct {
		err  win32.Errno
		code uintptr
		text string
	}{
		{win32.ERROR_FILE_NOT_FOUND, 2, "The system cannot find the file specified."},
		{win32.ERROR_ACCESS_DENIED, 5, "Access is denied."},
		{win32.ERROR_INVALID_HANDLE, 6, "The handle is invalid."},
		{win32.ERROR_NO_MORE_FILES, 18, "There are no more files."},
		{win32.ERROR_BAD_LENGTH, 24, "The program issued a command but the command length is incorrect."},
		{win32.ERROR_NOT_SUPPORTED, 50, "The request is not supported."},
		{win32.ERROR_INVALID_PARAMETER, 87, "The parameter is incorrect."},
		{win32.ERROR_CALL_NOT_IMPLEMENTED, 120, "This function is not supported on this system."},
		{win32.ERROR_INSUFFICIENT_BUFFER, 122, "The data area passed to a system call is too small."},
		{win32.ERROR_NOACCESS, 998, "Invalid access to memory location."},
	} {
		if uintptr(tc.err) != tc.code {
			t.Errorf("%v = %d; want %d", tc.err, uintptr(tc.err), tc.code)
		}
		// Wine's message table words them differently ("Access denied.").
		if !runningOnWine() && tc.err.Error() != tc.text {
			t.Errorf("Errno(%d).Error() = %q; want %q", tc.code, tc.err.Error(), tc.text)
		}
		wrapped := fmt.Errorf("context: %w", tc.err)
		if !errors.Is(wrapped, tc.err) {
			t.Errorf("errors.Is(wrapped %d, itself) = false", tc.code)
		}
		var e win32.Errno
		if !errors.As(wrapped, &e) || e != tc.err {
			t.Errorf("errors.As(wrapped %d) = %d", tc.code, e)
		}
	}
	if !runningOnWine() {
		if got := win32.Errno(0xdead_beef).Error(); got != "winapi error #3735928559" {
			t.Errorf("unknown code: %q", got)
		}
	}
	if !errors.Is(win32.ERROR_ACCESS_DENIED, fs.ErrPermission) || errors.Is(win32.ERROR_INVALID_HANDLE, fs.ErrPermission) {
		t.Error("fs.ErrPermission matches other than ERROR_ACCESS_DENIED")
	}
	if !errors.Is(win32.ERROR_FILE_NOT_FOUND, fs.ErrNotExist) {
		t.Error("ERROR_FILE_NOT_FOUND is not fs.ErrNotExist")
	}
	for _, e := range []win32.Errno{win32.ERROR_CALL_NOT_IMPLEMENTED, win32.ERROR_NOT_SUPPORTED} {
		if !errors.Is(e, errors.ErrUnsupported) {
			t.Errorf("%d is not errors.ErrUnsupported", uintptr(e))
		}
	}
}

// TestErrnoFromCalls checks that failed calls return the bare Errno values,
// comparable with ==.
func TestErrnoFromCalls(t *testing.T) {
	_, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, 0)
	skipIfNotImplemented(t, err)
	if err != win32.ERROR_INVALID_PARAMETER {
		t.Fatalf("OpenProcess(0) = %v", err)
	}
	if _, ok := err.(win32.Errno); !ok {
		t.Errorf("OpenProcess(0) returned %T, not win32.Errno", err)
	}
	var ft win32.Filetime
	err = win32.GetProcessTimes(0, &ft, &ft, &ft, &ft)
	if err != win32.ERROR_INVALID_HANDLE || !errors.Is(err, win32.ERROR_INVALID_HANDLE) {
		t.Errorf("GetProcessTimes(0) = %v", err)
	}
}
