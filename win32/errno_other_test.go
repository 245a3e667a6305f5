//go:build !windows

package win32_test

import (
	"errors"
	"testing"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/win32"
)

// TestErrnoSentinels checks the mapping onto cputime's sentinel errors,
// which exists where win32 is built on cputime.
func TestErrnoSentinels(t *testing.T) {
	for _, tc := range []struct {
		err      win32.Errno
		sentinel error
	}{
		{win32.ERROR_ACCESS_DENIED, cputime.ErrAccessDenied},
		{win32.ERROR_INVALID_HANDLE, cputime.ErrClosed},
		{win32.ERROR_INVALID_PARAMETER, cputime.ErrInvalidArgument},
		{win32.ERROR_INVALID_PARAMETER, cputime.ErrNotFound},
		{win32.ERROR_CALL_NOT_IMPLEMENTED, cputime.ErrNotSupported},
		{win32.ERROR_NOT_SUPPORTED, cputime.ErrNotSupported},
	} {
		if !errors.Is(tc.err, tc.sentinel) {
			t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.sentinel)
		}
	}
	for _, tc := range []struct {
		err      win32.Errno
		sentinel error
	}{
		{win32.ERROR_ACCESS_DENIED, cputime.ErrClosed},
		{win32.ERROR_INVALID_HANDLE, cputime.ErrAccessDenied},
		{win32.ERROR_NO_MORE_FILES, cputime.ErrNotFound},
		{win32.ERROR_BAD_LENGTH, cputime.ErrInvalidArgument},
	} {
		if errors.Is(tc.err, tc.sentinel) {
			t.Errorf("errors.Is(%v, %v) = true", tc.err, tc.sentinel)
		}
	}

	_, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, nonexistentID)
	skipIfNotImplemented(t, err)
	if !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("OpenProcess(nonexistent) = %v; not cputime.ErrNotFound", err)
	}
	h, err := win32.OpenProcess(win32.SYNCHRONIZE, false, win32.GetCurrentProcessId())
	if err != nil {
		t.Fatal(err)
	}
	defer win32.CloseHandle(h)
	var ft win32.Filetime
	if err := win32.GetProcessTimes(h, &ft, &ft, &ft, &ft); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("GetProcessTimes(SYNCHRONIZE only) = %v; not cputime.ErrAccessDenied", err)
	}
}
