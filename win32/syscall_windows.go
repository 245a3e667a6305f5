package win32

import (
	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// On Windows every function is the kernel32 call itself, through
// golang.org/x/sys/windows where it declares the call and through the
// generated bindings of internal/winapi where it does not. Arguments pass
// unchanged, errors are the calls' syscall.Errno values, and nothing is
// checked on the way: a nil pointer faults as it does in C.

// OpenProcess is windows.OpenProcess.
func OpenProcess(desiredAccess uint32, inheritHandle bool, processId uint32) (handle Handle, err error) {
	return windows.OpenProcess(desiredAccess, inheritHandle, processId)
}

// OpenThread is windows.OpenThread.
func OpenThread(desiredAccess uint32, inheritHandle bool, threadId uint32) (handle Handle, err error) {
	return windows.OpenThread(desiredAccess, inheritHandle, threadId)
}

// CloseHandle is windows.CloseHandle.
func CloseHandle(handle Handle) (err error) { return windows.CloseHandle(handle) }

// CurrentProcess is windows.CurrentProcess: the pseudo-handle -1.
func CurrentProcess() Handle { return windows.CurrentProcess() }

// CurrentThread is windows.CurrentThread: the pseudo-handle -2.
func CurrentThread() Handle { return windows.CurrentThread() }

// GetCurrentProcessId is windows.GetCurrentProcessId.
func GetCurrentProcessId() (pid uint32) { return windows.GetCurrentProcessId() }

// GetCurrentThreadId is windows.GetCurrentThreadId.
func GetCurrentThreadId() (id uint32) { return windows.GetCurrentThreadId() }

// GetProcessId is windows.GetProcessId.
func GetProcessId(process Handle) (id uint32, err error) { return windows.GetProcessId(process) }

// GetThreadId is kernel32 GetThreadId.
func GetThreadId(thread Handle) (id uint32, err error) { return winapi.GetThreadId(thread) }

// GetProcessIdOfThread is kernel32 GetProcessIdOfThread.
func GetProcessIdOfThread(thread Handle) (id uint32, err error) {
	return winapi.GetProcessIdOfThread(thread)
}

// GetThreadTimes is kernel32 GetThreadTimes.
func GetThreadTimes(thread Handle, creationTime, exitTime, kernelTime, userTime *Filetime) (err error) {
	return winapi.GetThreadTimes(thread, creationTime, exitTime, kernelTime, userTime)
}

// GetProcessTimes is windows.GetProcessTimes.
func GetProcessTimes(handle Handle, creationTime, exitTime, kernelTime, userTime *Filetime) (err error) {
	return windows.GetProcessTimes(handle, creationTime, exitTime, kernelTime, userTime)
}

// QueryThreadCycleTime is kernel32 QueryThreadCycleTime.
func QueryThreadCycleTime(thread Handle, cycleTime *uint64) (err error) {
	return winapi.QueryThreadCycleTime(thread, cycleTime)
}

// QueryProcessCycleTime is kernel32 QueryProcessCycleTime.
func QueryProcessCycleTime(process Handle, cycleTime *uint64) (err error) {
	return winapi.QueryProcessCycleTime(process, cycleTime)
}

// QueryIdleProcessorCycleTime is kernel32 QueryIdleProcessorCycleTime.
// Wine 8 does not implement it: calling it there aborts the process.
func QueryIdleProcessorCycleTime(bufferLength *uint32, processorIdleCycleTime *uint64) (err error) {
	return winapi.QueryIdleProcessorCycleTime(bufferLength, processorIdleCycleTime)
}

// WaitForSingleObject is windows.WaitForSingleObject.
func WaitForSingleObject(handle Handle, waitMilliseconds uint32) (event uint32, err error) {
	return windows.WaitForSingleObject(handle, waitMilliseconds)
}

// CreateToolhelp32Snapshot is windows.CreateToolhelp32Snapshot.
func CreateToolhelp32Snapshot(flags uint32, processId uint32) (handle Handle, err error) {
	return windows.CreateToolhelp32Snapshot(flags, processId)
}

// Thread32First is windows.Thread32First.
func Thread32First(snapshot Handle, threadEntry *ThreadEntry32) (err error) {
	return windows.Thread32First(snapshot, threadEntry)
}

// Thread32Next is windows.Thread32Next.
func Thread32Next(snapshot Handle, threadEntry *ThreadEntry32) (err error) {
	return windows.Thread32Next(snapshot, threadEntry)
}

// Process32First is windows.Process32First (kernel32 Process32FirstW).
func Process32First(snapshot Handle, procEntry *ProcessEntry32) (err error) {
	return windows.Process32First(snapshot, procEntry)
}

// Process32Next is windows.Process32Next (kernel32 Process32NextW).
func Process32Next(snapshot Handle, procEntry *ProcessEntry32) (err error) {
	return windows.Process32Next(snapshot, procEntry)
}

// FileTimeToSystemTime is kernel32 FileTimeToSystemTime.
func FileTimeToSystemTime(fileTime *Filetime, systemTime *Systemtime) (err error) {
	return winapi.FileTimeToSystemTime(fileTime, systemTime)
}

// SystemTimeToFileTime is kernel32 SystemTimeToFileTime.
func SystemTimeToFileTime(systemTime *Systemtime, fileTime *Filetime) (err error) {
	return winapi.SystemTimeToFileTime(systemTime, fileTime)
}

// FileTimeToLocalFileTime is kernel32 FileTimeToLocalFileTime.
func FileTimeToLocalFileTime(fileTime *Filetime, localFileTime *Filetime) (err error) {
	return winapi.FileTimeToLocalFileTime(fileTime, localFileTime)
}

// LocalFileTimeToFileTime is kernel32 LocalFileTimeToFileTime.
func LocalFileTimeToFileTime(localFileTime *Filetime, fileTime *Filetime) (err error) {
	return winapi.LocalFileTimeToFileTime(localFileTime, fileTime)
}

// FileTimeToDosDateTime is kernel32 FileTimeToDosDateTime.
func FileTimeToDosDateTime(fileTime *Filetime, fatDate *uint16, fatTime *uint16) (err error) {
	return winapi.FileTimeToDosDateTime(fileTime, fatDate, fatTime)
}

// DosDateTimeToFileTime is kernel32 DosDateTimeToFileTime.
func DosDateTimeToFileTime(fatDate uint16, fatTime uint16, fileTime *Filetime) (err error) {
	return winapi.DosDateTimeToFileTime(fatDate, fatTime, fileTime)
}

// CompareFileTime is kernel32 CompareFileTime.
func CompareFileTime(fileTime1 *Filetime, fileTime2 *Filetime) int32 {
	return winapi.CompareFileTime(fileTime1, fileTime2)
}
