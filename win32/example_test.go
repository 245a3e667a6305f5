package win32_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"runtime"
	"unsafe"

	"github.com/cputime/cputime"
	// Ported from Windows: this import was "golang.org/x/sys/windows", and
	// every windows.X below was windows.X; nothing else changed.
	windows "github.com/cputime/cputime/win32"
)

// A typical snippet of Windows code, ported by changing its import: the
// CPU time a process has used.
func Example() {
	pid := windows.GetCurrentProcessId()
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		log.Fatal(err)
	}
	defer windows.CloseHandle(h)

	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		log.Fatal(err)
	}
	// kernel and user are amounts of 100 ns ticks, not instants: convert
	// them as such (Filetime.Nanoseconds would subtract 1601..1970).
	k, _ := cputime.TicksFromParts(kernel.LowDateTime, kernel.HighDateTime).Duration()
	u, _ := cputime.TicksFromParts(user.LowDateTime, user.HighDateTime).Duration()
	started := cputime.FiletimeFromParts(creation.LowDateTime, creation.HighDateTime).Time()
	fmt.Printf("process %d started %v, used %v in kernel mode and %v in user mode\n", pid, started, k, u)
}

// The threads of this process, from a Toolhelp snapshot of the system's.
func ExampleCreateToolhelp32Snapshot() {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer windows.CloseHandle(snap)
	pid := windows.GetCurrentProcessId()
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID == pid {
			fmt.Println("thread", te.ThreadID)
		}
	}
	if err != windows.ERROR_NO_MORE_FILES {
		log.Fatal(err)
	}
}

// The calling thread's times: lock the goroutine to its thread first.
func ExampleGetThreadTimes() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetThreadTimes(windows.CurrentThread(), &creation, &exit, &kernel, &user); err != nil {
		log.Fatal(err)
	}
	u, _ := cputime.TicksFromParts(user.LowDateTime, user.HighDateTime).Duration()
	fmt.Println("this thread has used", u, "in user mode")
}

// Errors are Win32 error codes, compared with == or errors.Is.
func ExampleErrno() {
	_, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, 0)
	fmt.Println(err == windows.ERROR_INVALID_PARAMETER)

	h, _ := windows.OpenProcess(windows.SYNCHRONIZE, false, windows.GetCurrentProcessId())
	defer windows.CloseHandle(h)
	var c, e, k, u windows.Filetime
	err = windows.GetProcessTimes(h, &c, &e, &k, &u) // no query right
	fmt.Println(errors.Is(err, windows.ERROR_ACCESS_DENIED), errors.Is(err, fs.ErrPermission))
	// Output:
	// true
	// true true
}

func ExampleFileTimeToSystemTime() {
	ft := windows.Filetime{LowDateTime: 0xd53e8000, HighDateTime: 0x019db1de} // 1970-01-01
	var st windows.Systemtime
	if err := windows.FileTimeToSystemTime(&ft, &st); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%04d-%02d-%02d, day of the week %d\n", st.Year, st.Month, st.Day, st.DayOfWeek)

	ft.HighDateTime = 0x80000000 // at or above 2^63: out of range
	fmt.Println(windows.FileTimeToSystemTime(&ft, &st) == windows.ERROR_INVALID_PARAMETER)
	// Output:
	// 1970-01-01, day of the week 4
	// true
}
