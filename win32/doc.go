// Package win32 is the Win32 API of thread and process times, with the
// names, signatures and conventions of golang.org/x/sys/windows, on every
// operating system. It is for porting Windows Go code: code that measures
// threads and processes with x/sys/windows builds and runs on Linux when
// its import of "golang.org/x/sys/windows" is changed, for these calls, to
// "github.com/cputime/cputime/win32".
//
// New code should use the package cputime instead, whose answers come in Go
// types (time.Time, time.Duration, iterators, errors with context).
//
// # Windows
//
// On Windows the types are aliases of the x/sys/windows ones (Handle,
// Filetime, Systemtime, ThreadEntry32, ProcessEntry32; Errno is
// syscall.Errno), so values pass between the two packages unchanged, and
// every function is the kernel32 call itself: the x/sys/windows function
// where there is one, otherwise a binding generated with mkwinsyscall
// (GetThreadTimes, the cycle-time queries, the time conversions,
// GetThreadId and GetProcessIdOfThread). Nothing is re-implemented or
// checked on the way, so a nil pointer faults as in C.
//
// # Linux
//
// On Linux the same calls are answered by the package cputime, and the
// types are defined here with the layout and fields of the x/sys/windows
// ones. Handles are entries of a table in this process, multiples of 4
// that are never reused while open, each referring to a cputime.Process, a
// cputime.Thread or a Toolhelp snapshot:
//
//	OpenProcess, OpenThread         cputime.OpenProcessAccess, cputime.OpenThreadAccess
//	CurrentProcess, CurrentThread   cputime.CurrentProcess, cputime.CurrentThread
//	GetProcessTimes, GetThreadTimes Process.Times, Thread.Times, as FILETIMEs
//	QueryProcessCycleTime           Process.CycleTime
//	QueryThreadCycleTime            Thread.CycleTime
//	QueryIdleProcessorCycleTime     cputime.AppendIdleProcessorCycleTimes
//	WaitForSingleObject             Process.Wait, Thread.Wait, with a timeout
//	CreateToolhelp32Snapshot        cputime.AllThreads, cputime.Processes
//	FileTimeToSystemTime, ...       cputime's Filetime and SystemTime conversions
//	CloseHandle                     Process.Close, Thread.Close
//
// Errors are values of Errno, numbered and worded as on Windows
// (ERROR_ACCESS_DENIED is 5, "Access is denied."), comparable with == and
// errors.Is, and matching cputime's sentinel errors through errors.Is
// (ERROR_ACCESS_DENIED is cputime.ErrAccessDenied, ERROR_INVALID_HANDLE is
// cputime.ErrClosed, ERROR_INVALID_PARAMETER is cputime.ErrInvalidArgument
// and cputime.ErrNotFound).
//
// The corner cases behave as on Windows: a handle that is 0, closed, or of
// the wrong kind fails with ERROR_INVALID_HANDLE; CloseHandle of a
// pseudo-handle succeeds and does nothing; a query the handle lacks the
// right for fails with ERROR_ACCESS_DENIED; id 0 or an id with no process
// or thread fails with ERROR_INVALID_PARAMETER; a task that has exited
// reports its exit time and final times, one that runs an exit time of 0;
// FILETIMEs at or above 2^63, invalid SYSTEMTIMEs and MS-DOS dates outside
// 1980-2107 fail with ERROR_INVALID_PARAMETER. A nil pointer where a call
// stores its result, which faults on Windows, fails with ERROR_NOACCESS
// instead; calls never panic on it.
//
// # What differs on Linux, and why
//
//   - Access rights. PROCESS_QUERY_INFORMATION,
//     PROCESS_QUERY_LIMITED_INFORMATION and SYNCHRONIZE (THREAD_* for
//     threads) are granted as cputime grants them (see cputime.Access: the
//     full query right where the caller may read the task as a debugger).
//     Any other right, such as PROCESS_VM_READ or PROCESS_TERMINATE, makes
//     OpenProcess fail with ERROR_ACCESS_DENIED: no call here uses it, and a
//     handle that claimed it would promise what Linux cannot deliver through
//     this package. Ported code that asks for
//     PROCESS_QUERY_INFORMATION|PROCESS_VM_READ only to read times should
//     ask for PROCESS_QUERY_LIMITED_INFORMATION, which is also what Windows
//     recommends.
//   - inheritHandle is ignored: handles are entries of this process's
//     table, not kernel objects a child could inherit.
//   - Handles exist only in this process, so they cannot be passed to
//     other processes or to C code, and x/sys/windows cannot use them.
//   - Times are more precise than on Windows: kernel + user is the
//     scheduler's exact nanosecond count, truncated to 100 ns, where Windows
//     counts timer ticks (about 15.6 ms). The split between kernel and user
//     mode is sampled, as on Windows.
//   - A thread's final times are the last ones its handle read: Linux frees
//     a thread's accounting when it exits. A process's final times are
//     exact (see cputime's Exit documentation).
//   - Cycle times are reference cycles (TSC ticks) computed from the exact
//     on-CPU time, not counted at each context switch; see
//     cputime.ReferenceFrequency.
//   - Toolhelp entries carry ids, the owner or parent process, the thread
//     count and the command name (ExeFile, at most 15 bytes, without
//     ".exe"); priorities are reported as 8 (normal) and the usage fields as
//     0. There is no "[System Process]" with id 0.
//   - FileTimeToLocalFileTime and LocalFileTimeToFileTime fail with
//     ERROR_INVALID_PARAMETER where the result would leave the FILETIME
//     range; Windows wraps around and succeeds.
//   - WaitForSingleObject waits only for processes and threads, the only
//     waitable objects this package has.
//
// On platforms other than Linux and Windows the conversions work, and the
// calls the package cputime cannot answer there fail with
// ERROR_CALL_NOT_IMPLEMENTED.
package win32
