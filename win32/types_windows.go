package win32

import "golang.org/x/sys/windows"

// On Windows every type is an alias of its golang.org/x/sys/windows
// counterpart, so values pass between the two packages unchanged and code
// that mixes them compiles as before.
type (
	// Handle is a Win32 HANDLE.
	Handle = windows.Handle
	// Filetime is a Win32 FILETIME.
	Filetime = windows.Filetime
	// Systemtime is a Win32 SYSTEMTIME.
	Systemtime = windows.Systemtime
	// ThreadEntry32 is a Win32 THREADENTRY32.
	ThreadEntry32 = windows.ThreadEntry32
	// ProcessEntry32 is a Win32 PROCESSENTRY32W.
	ProcessEntry32 = windows.ProcessEntry32
)

// NsecToFiletime converts nanoseconds since 1970-01-01 UTC to a Filetime,
// as windows.NsecToFiletime does.
func NsecToFiletime(nsec int64) Filetime { return windows.NsecToFiletime(nsec) }
