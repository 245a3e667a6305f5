package win32

// Constants with the values of the Win32 headers, typed as the functions
// that take or return them are (golang.org/x/sys/windows declares most of
// them untyped; the values are the same).

// Process access rights, for OpenProcess. On Linux only these three can be
// granted (see OpenProcess); any other right makes OpenProcess fail with
// ERROR_ACCESS_DENIED.
const (
	PROCESS_QUERY_INFORMATION         uint32 = 0x0400
	PROCESS_QUERY_LIMITED_INFORMATION uint32 = 0x1000
	SYNCHRONIZE                       uint32 = 0x00100000
)

// Process rights that Linux cannot grant through this package, declared so
// that ported code compiles: on Linux OpenProcess fails with
// ERROR_ACCESS_DENIED if they are requested.
const (
	PROCESS_TERMINATE uint32 = 0x0001
	PROCESS_VM_READ   uint32 = 0x0010
)

// Thread access rights, for OpenThread (with SYNCHRONIZE).
const (
	THREAD_QUERY_INFORMATION         uint32 = 0x0040
	THREAD_QUERY_LIMITED_INFORMATION uint32 = 0x0800
)

// Toolhelp snapshot kinds, for CreateToolhelp32Snapshot.
const (
	TH32CS_SNAPPROCESS uint32 = 0x02
	TH32CS_SNAPTHREAD  uint32 = 0x04
)

// MAX_PATH is the length of ProcessEntry32.ExeFile, in UTF-16 code units.
const MAX_PATH = 260

// WaitForSingleObject's timeout that never expires, and its results.
const (
	INFINITE      uint32 = 0xFFFFFFFF
	WAIT_OBJECT_0 uint32 = 0
	WAIT_TIMEOUT  uint32 = 258
	WAIT_FAILED   uint32 = 0xFFFFFFFF
)

// InvalidHandle is INVALID_HANDLE_VALUE, which CreateToolhelp32Snapshot
// returns on failure. It has the same value as the CurrentProcess
// pseudo-handle, as in Win32.
const InvalidHandle = ^Handle(0)
