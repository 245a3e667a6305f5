package winapi

import "golang.org/x/sys/windows"

//sys	GetThreadTimes(thread windows.Handle, creationTime *windows.Filetime, exitTime *windows.Filetime, kernelTime *windows.Filetime, userTime *windows.Filetime) (err error) = kernel32.GetThreadTimes
//sys	QueryThreadCycleTime(thread windows.Handle, cycleTime *uint64) (err error) = kernel32.QueryThreadCycleTime
//sys	QueryProcessCycleTime(process windows.Handle, cycleTime *uint64) (err error) = kernel32.QueryProcessCycleTime
//sys	QueryIdleProcessorCycleTime(bufferLength *uint32, processorIdleCycleTime *uint64) (err error) = kernel32.QueryIdleProcessorCycleTime
//sys	QueryIdleProcessorCycleTimeEx(group uint16, bufferLength *uint32, processorIdleCycleTime *uint64) (err error) = kernel32.QueryIdleProcessorCycleTimeEx
//sys	GetActiveProcessorGroupCount() (count uint16) = kernel32.GetActiveProcessorGroupCount
//sys	QueryPerformanceCounter(counter *int64) (err error) = kernel32.QueryPerformanceCounter
//sys	QueryPerformanceFrequency(frequency *int64) (err error) = kernel32.QueryPerformanceFrequency
//sys	GetThreadId(thread windows.Handle) (id uint32, err error) = kernel32.GetThreadId
//sys	GetProcessIdOfThread(thread windows.Handle) (id uint32, err error) = kernel32.GetProcessIdOfThread
//sys	GetExitCodeThread(thread windows.Handle, exitCode *uint32) (err error) = kernel32.GetExitCodeThread
//sys	FileTimeToSystemTime(fileTime *windows.Filetime, systemTime *windows.Systemtime) (err error) = kernel32.FileTimeToSystemTime
//sys	SystemTimeToFileTime(systemTime *windows.Systemtime, fileTime *windows.Filetime) (err error) = kernel32.SystemTimeToFileTime
//sys	FileTimeToLocalFileTime(fileTime *windows.Filetime, localFileTime *windows.Filetime) (err error) = kernel32.FileTimeToLocalFileTime
//sys	LocalFileTimeToFileTime(localFileTime *windows.Filetime, fileTime *windows.Filetime) (err error) = kernel32.LocalFileTimeToFileTime
//sys	FileTimeToDosDateTime(fileTime *windows.Filetime, fatDate *uint16, fatTime *uint16) (err error) = kernel32.FileTimeToDosDateTime
//sys	DosDateTimeToFileTime(fatDate uint16, fatTime uint16, fileTime *windows.Filetime) (err error) = kernel32.DosDateTimeToFileTime
//sys	CompareFileTime(fileTime1 *windows.Filetime, fileTime2 *windows.Filetime) (result int32) = kernel32.CompareFileTime
//sys	IsProcessInJob(process windows.Handle, job windows.Handle, result *int32) (err error) = kernel32.IsProcessInJob
//sys	GetSystemTimeAdjustment(timeAdjustment *uint32, timeIncrement *uint32, timeAdjustmentDisabled *int32) (err error) = kernel32.GetSystemTimeAdjustment

// GetQueuedCompletionStatusValue is GetQueuedCompletionStatus for ports
// whose packets carry a value, not an OVERLAPPED, in the overlapped field
// (a job's messages carry a process id there): a uintptr, which the Go
// garbage collector never takes for a pointer.
//sys	GetQueuedCompletionStatusValue(port windows.Handle, qty *uint32, key *uintptr, overlapped *uintptr, timeout uint32) (err error) = kernel32.GetQueuedCompletionStatus

// JOBOBJECT_BASIC_ACCOUNTING_INFORMATION is what
// QueryInformationJobObject(JobObjectBasicAccountingInformation) fills:
// times in 100 ns units, summed over every process ever in the job
// (terminated ones included).
type JOBOBJECT_BASIC_ACCOUNTING_INFORMATION struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// JOBOBJECT_ASSOCIATE_COMPLETION_PORT is what
// SetInformationJobObject(JobObjectAssociateCompletionPortInformation)
// takes: the port that receives the job's messages, with this key.
type JOBOBJECT_ASSOCIATE_COMPLETION_PORT struct {
	CompletionKey  uintptr
	CompletionPort windows.Handle
}

// The messages a job posts to its completion port (winnt.h): the message
// is the packet's byte count, the process id its overlapped value.
const (
	JOB_OBJECT_MSG_END_OF_JOB_TIME       = 1
	JOB_OBJECT_MSG_END_OF_PROCESS_TIME   = 2
	JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT  = 3
	JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO   = 4
	JOB_OBJECT_MSG_NEW_PROCESS           = 6
	JOB_OBJECT_MSG_EXIT_PROCESS          = 7
	JOB_OBJECT_MSG_ABNORMAL_EXIT_PROCESS = 8
)

// SYSTEM_THREAD_INFORMATION is one thread's record in the buffer that
// NtQuerySystemInformation(SystemProcessInformation) fills: it follows its
// process's windows.SYSTEM_PROCESS_INFORMATION, NumberOfThreads of them.
// Times are in 100 ns units; CreateTime is a FILETIME.
type SYSTEM_THREAD_INFORMATION struct {
	KernelTime      int64
	UserTime        int64
	CreateTime      int64
	WaitTime        uint32
	StartAddress    uintptr
	ClientId        CLIENT_ID
	Priority        int32
	BasePriority    int32
	ContextSwitches uint32
	ThreadState     uint32
	WaitReason      uint32
}

// CLIENT_ID names a thread: its process's id and its own (as handles).
type CLIENT_ID struct {
	UniqueProcess uintptr
	UniqueThread  uintptr
}

// SYSTEM_PROCESS_INFORMATION is one process's record in that buffer.
type SYSTEM_PROCESS_INFORMATION = windows.SYSTEM_PROCESS_INFORMATION
