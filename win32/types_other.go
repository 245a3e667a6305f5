//go:build !windows

package win32

// The types below have the layout and fields of their
// golang.org/x/sys/windows counterparts (which are aliases on Windows), so
// ported code that fills or reads them compiles and behaves alike.

// Handle is a Win32 HANDLE. Here it is an index into this package's handle
// table (a multiple of 4, never reused while open), or one of the
// pseudo-handles CurrentProcess and CurrentThread.
type Handle uintptr

// Filetime is a Win32 FILETIME: 100 ns ticks, split into two 32-bit halves.
// It holds an instant (ticks since 1601-01-01 UTC: creation and exit
// times) or an amount of time (ticks: kernel and user times), depending on
// where it came from.
type Filetime struct {
	LowDateTime  uint32
	HighDateTime uint32
}

// Nanoseconds returns ft as nanoseconds since 1970-01-01 UTC, exactly as
// golang.org/x/sys/windows's Filetime.Nanoseconds does, including its
// overflow: it treats ft as an instant, so it is wrong for the kernel and
// user times of GetThreadTimes and GetProcessTimes, which are amounts.
// For those, use cputime.TicksFromParts(ft.LowDateTime,
// ft.HighDateTime).Duration(); for instants, cputime.FiletimeFromParts(...).Time()
// is exact over the whole range.
func (ft *Filetime) Nanoseconds() int64 {
	nsec := int64(ft.HighDateTime)<<32 + int64(ft.LowDateTime)
	nsec -= epochDeltaTicks
	return nsec * 100
}

// NsecToFiletime converts nanoseconds since 1970-01-01 UTC to a Filetime,
// exactly as golang.org/x/sys/windows's NsecToFiletime does (truncating
// toward zero to whole 100 ns ticks).
func NsecToFiletime(nsec int64) (ft Filetime) {
	nsec /= 100
	nsec += epochDeltaTicks
	ft.LowDateTime = uint32(nsec & 0xffffffff)
	ft.HighDateTime = uint32(nsec >> 32 & 0xffffffff)
	return ft
}

// epochDeltaTicks is 1970-01-01 minus 1601-01-01 in 100 ns ticks: 369 years,
// 89 of them leap years.
const epochDeltaTicks = 116444736000000000

// Systemtime is a Win32 SYSTEMTIME: a calendar date and time of day, UTC or
// local depending on where it came from. Year is 1601-30827, Month 1-12,
// DayOfWeek 0 (Sunday) to 6, Day 1-31, Hour 0-23, Minute and Second 0-59,
// Milliseconds 0-999.
type Systemtime struct {
	Year         uint16
	Month        uint16
	DayOfWeek    uint16
	Day          uint16
	Hour         uint16
	Minute       uint16
	Second       uint16
	Milliseconds uint16
}

// ThreadEntry32 is a Win32 THREADENTRY32, one thread of a Toolhelp
// snapshot. Set Size to unsafe.Sizeof(ThreadEntry32{}) before calling
// Thread32First. Here Usage, DeltaPri and Flags are always 0 (as on
// Windows, which no longer uses them), and BasePri is always 8, the base
// priority of a normal thread of a normal process: Linux priorities are
// not translated.
type ThreadEntry32 struct {
	Size           uint32
	Usage          uint32
	ThreadID       uint32
	OwnerProcessID uint32
	BasePri        int32
	DeltaPri       int32
	Flags          uint32
}

// ProcessEntry32 is a Win32 PROCESSENTRY32W, one process of a Toolhelp
// snapshot. Set Size to unsafe.Sizeof(ProcessEntry32{}) before calling
// Process32First. Here ExeFile holds the process's command name as the
// kernel keeps it (at most 15 bytes, without ".exe"), NUL-terminated in
// UTF-16; Usage, DefaultHeapID, ModuleID and Flags are 0 and PriClassBase
// is 8 (normal).
type ProcessEntry32 struct {
	Size            uint32
	Usage           uint32
	ProcessID       uint32
	DefaultHeapID   uintptr
	ModuleID        uint32
	Threads         uint32
	ParentProcessID uint32
	PriClassBase    int32
	Flags           uint32
	ExeFile         [MAX_PATH]uint16
}
