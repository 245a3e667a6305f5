package win32_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cputime/cputime/win32"
)

// nonexistentID is a process and thread id that no system hands out now:
// above Linux's largest (2^22) and far above any Windows id in use.
const nonexistentID = 0x7ffffff0

func TestBadHandles(t *testing.T) {
	if _, err := win32.OpenProcess(win32.SYNCHRONIZE, false, win32.GetCurrentProcessId()); err != nil {
		skipIfNotImplemented(t, err)
		t.Fatal(err)
	}
	process := opened(t)(win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION|win32.SYNCHRONIZE, false, win32.GetCurrentProcessId()))
	thread := opened(t)(win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION|win32.SYNCHRONIZE, false, mainThreadID))
	snap := opened(t)(win32.CreateToolhelp32Snapshot(win32.TH32CS_SNAPPROCESS, 0))
	// Windows hands a closed handle's value to the next handle opened, so
	// the closed handle is made last and this test opens nothing after it.
	closedProcess, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION|win32.SYNCHRONIZE, false, win32.GetCurrentProcessId())
	if err != nil {
		t.Fatal(err)
	}
	if err := win32.CloseHandle(closedProcess); err != nil {
		t.Fatal(err)
	}

	var c, e, k, u win32.Filetime
	for _, tc := range []struct {
		name string
		h    win32.Handle
	}{{"NULL", 0}, {"closed", closedProcess}, {"thread handle", thread}, {"thread pseudo-handle", win32.CurrentThread()}, {"snapshot", snap}} {
		if tc.name == "closed" && runtime.GOOS == "windows" {
			continue // the value may name another handle by now: see below
		}
		if err := win32.GetProcessTimes(tc.h, &c, &e, &k, &u); err != win32.ERROR_INVALID_HANDLE {
			t.Errorf("GetProcessTimes(%s) = %v; want ERROR_INVALID_HANDLE", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		h    win32.Handle
	}{{"NULL", 0}, {"closed", closedProcess}, {"process handle", process}, {"process pseudo-handle", win32.CurrentProcess()}, {"snapshot", snap}} {
		if tc.name == "closed" && runtime.GOOS == "windows" {
			continue // the value may name another handle by now: see below
		}
		if err := win32.GetThreadTimes(tc.h, &c, &e, &k, &u); err != win32.ERROR_INVALID_HANDLE {
			t.Errorf("GetThreadTimes(%s) = %v; want ERROR_INVALID_HANDLE", tc.name, err)
		}
	}
	if _, err := win32.GetProcessId(thread); err != win32.ERROR_INVALID_HANDLE {
		t.Errorf("GetProcessId(thread handle) = %v; want ERROR_INVALID_HANDLE", err)
	}
	if _, err := win32.GetThreadId(process); err != win32.ERROR_INVALID_HANDLE {
		t.Errorf("GetThreadId(process handle) = %v; want ERROR_INVALID_HANDLE", err)
	}
	for _, tc := range []struct {
		name string
		h    win32.Handle
	}{{"NULL", 0}, {"closed", closedProcess}} {
		if tc.name == "closed" && runtime.GOOS == "windows" {
			continue // the value may name another handle by now: see below
		}
		if ev, err := win32.WaitForSingleObject(tc.h, 0); ev != win32.WAIT_FAILED || err != win32.ERROR_INVALID_HANDLE {
			t.Errorf("WaitForSingleObject(%s) = %#x, %v; want WAIT_FAILED, ERROR_INVALID_HANDLE", tc.name, ev, err)
		}
	}
	// A snapshot handle lacks the SYNCHRONIZE right, which Windows checks
	// before it finds that a snapshot is not waitable.
	if ev, err := win32.WaitForSingleObject(snap, 0); ev != win32.WAIT_FAILED || err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("WaitForSingleObject(snapshot) = %#x, %v; want WAIT_FAILED, ERROR_ACCESS_DENIED", ev, err)
	}
	if err := win32.CloseHandle(0); err != win32.ERROR_INVALID_HANDLE {
		t.Errorf("CloseHandle(NULL) = %v; want ERROR_INVALID_HANDLE", err)
	}
	// A closed handle is only safe to use where handle values are never
	// reused: on Windows the Go runtime may have been given the same value
	// for one of its own threads or events meanwhile (under Wine the
	// closed value can read a runtime thread's times, and closing it again
	// kill the runtime), so closed handles are tested on Linux only.
	if runtime.GOOS != "windows" {
		if err := win32.CloseHandle(closedProcess); err != win32.ERROR_INVALID_HANDLE {
			t.Errorf("CloseHandle(closed) = %v; want ERROR_INVALID_HANDLE", err)
		}
	}
	for _, h := range []win32.Handle{win32.CurrentProcess(), win32.CurrentThread()} {
		if err := win32.CloseHandle(h); err != nil {
			t.Errorf("CloseHandle(pseudo-handle %#x) = %v; want success", h, err)
		}
	}
	// The pseudo-handles still work after being "closed".
	processTimes(t, win32.CurrentProcess())
}

func TestPseudoHandles(t *testing.T) {
	if win32.CurrentProcess() != ^win32.Handle(0) || win32.CurrentThread() != ^win32.Handle(1) {
		t.Errorf("pseudo-handles %#x, %#x; want -1, -2", win32.CurrentProcess(), win32.CurrentThread())
	}
	if win32.InvalidHandle != win32.CurrentProcess() {
		t.Errorf("InvalidHandle %#x", win32.InvalidHandle)
	}
	id, err := win32.GetProcessId(win32.CurrentProcess())
	skipIfNotImplemented(t, err)
	if err != nil || id != win32.GetCurrentProcessId() {
		t.Errorf("GetProcessId(CurrentProcess()) = %d, %v; want %d", id, err, win32.GetCurrentProcessId())
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if id, err := win32.GetThreadId(win32.CurrentThread()); err != nil || id != win32.GetCurrentThreadId() {
		t.Errorf("GetThreadId(CurrentThread()) = %d, %v; want %d", id, err, win32.GetCurrentThreadId())
	}
	if ev, err := win32.WaitForSingleObject(win32.CurrentProcess(), 10); ev != win32.WAIT_TIMEOUT || err != nil {
		t.Errorf("WaitForSingleObject(CurrentProcess(), 10) = %d, %v; want WAIT_TIMEOUT", ev, err)
	}
}

func TestAccessDenied(t *testing.T) {
	pid := win32.GetCurrentProcessId()
	syncOnly, err := win32.OpenProcess(win32.SYNCHRONIZE, false, pid)
	skipIfNotImplemented(t, err)
	syncOnly = opened(t)(syncOnly, err)
	var c, e, k, u win32.Filetime
	if err := win32.GetProcessTimes(syncOnly, &c, &e, &k, &u); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("GetProcessTimes(SYNCHRONIZE only) = %v; want ERROR_ACCESS_DENIED", err)
	}
	if _, err := win32.GetProcessId(syncOnly); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("GetProcessId(SYNCHRONIZE only) = %v; want ERROR_ACCESS_DENIED", err)
	}
	queryOnly := opened(t)(win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, pid))
	if ev, err := win32.WaitForSingleObject(queryOnly, 0); ev != win32.WAIT_FAILED || err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("WaitForSingleObject(no SYNCHRONIZE) = %#x, %v; want WAIT_FAILED, ERROR_ACCESS_DENIED", ev, err)
	}
	// The full right implies the limited one, as on Windows.
	full := opened(t)(win32.OpenProcess(win32.PROCESS_QUERY_INFORMATION, false, pid))
	processTimes(t, full)

	threadSync := opened(t)(win32.OpenThread(win32.SYNCHRONIZE, false, mainThreadID))
	if err := win32.GetThreadTimes(threadSync, &c, &e, &k, &u); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("GetThreadTimes(SYNCHRONIZE only) = %v; want ERROR_ACCESS_DENIED", err)
	}
	if _, err := win32.GetThreadId(threadSync); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("GetThreadId(SYNCHRONIZE only) = %v; want ERROR_ACCESS_DENIED", err)
	}
	threadFull := opened(t)(win32.OpenThread(win32.THREAD_QUERY_INFORMATION, false, mainThreadID))
	threadTimes(t, threadFull)
}

func TestInvalidIDs(t *testing.T) {
	for _, id := range []uint32{0, nonexistentID} {
		h, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, id)
		skipIfNotImplemented(t, err)
		if err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("OpenProcess(%#x) = %#x, %v; want ERROR_INVALID_PARAMETER", id, h, err)
		}
		if h, err := win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION, false, id); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("OpenThread(%#x) = %#x, %v; want ERROR_INVALID_PARAMETER", id, h, err)
		}
	}
}

func TestNilPointers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows a nil pointer faults in kernel32, as in C")
	}
	var ft win32.Filetime
	var st win32.Systemtime
	var d, tm uint16
	// A snapshot with nothing in it: Toolhelp checks the pointer first.
	snap := opened(t)(win32.CreateToolhelp32Snapshot(0, 0))
	for name, f := range map[string]func() error{
		"GetProcessTimes":        func() error { return win32.GetProcessTimes(win32.CurrentProcess(), &ft, nil, &ft, &ft) },
		"GetThreadTimes":         func() error { return win32.GetThreadTimes(win32.CurrentThread(), &ft, &ft, &ft, nil) },
		"QueryThreadCycleTime":   func() error { return win32.QueryThreadCycleTime(win32.CurrentThread(), nil) },
		"QueryProcessCycleTime":  func() error { return win32.QueryProcessCycleTime(win32.CurrentProcess(), nil) },
		"FileTimeToSystemTime":   func() error { return win32.FileTimeToSystemTime(&ft, nil) },
		"SystemTimeToFileTime":   func() error { return win32.SystemTimeToFileTime(nil, &ft) },
		"FileTimeToLocal":        func() error { return win32.FileTimeToLocalFileTime(&ft, nil) },
		"LocalFileTimeToFile":    func() error { return win32.LocalFileTimeToFileTime(nil, &ft) },
		"FileTimeToDosDateTime":  func() error { return win32.FileTimeToDosDateTime(&ft, &d, nil) },
		"DosDateTimeToFileTime":  func() error { return win32.DosDateTimeToFileTime(d, tm, nil) },
		"Thread32First":          func() error { return win32.Thread32First(snap, nil) },
		"Process32Next":          func() error { return win32.Process32Next(snap, nil) },
		"FileTimeToSystemTime 2": func() error { return win32.FileTimeToSystemTime(nil, &st) },
		"Process32First":         func() error { return win32.Process32First(snap, nil) },
	} {
		if err := f(); err != win32.ERROR_NOACCESS {
			t.Errorf("%s with a nil pointer = %v; want ERROR_NOACCESS", name, err)
		}
	}
	if err := win32.QueryIdleProcessorCycleTime(nil, nil); err != win32.ERROR_INVALID_PARAMETER {
		t.Errorf("QueryIdleProcessorCycleTime(nil, nil) = %v; want ERROR_INVALID_PARAMETER", err)
	}
}

// TestConcurrentUse opens, queries and closes handles from many goroutines
// at once, closing some while others use them: under -race this checks the
// handle table; every call must succeed or fail with ERROR_INVALID_HANDLE.
func TestConcurrentUse(t *testing.T) {
	pid := win32.GetCurrentProcessId()
	if _, err := win32.OpenProcess(win32.SYNCHRONIZE, false, pid); err != nil {
		skipIfNotImplemented(t, err)
	}
	var wg sync.WaitGroup
	handles := make(chan win32.Handle, 64)
	deadline := time.Now().Add(300 * time.Millisecond)
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				h, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
				if err != nil {
					t.Error(err)
					return
				}
				handles <- h
				var c, e, k, u win32.Filetime
				if err := win32.GetProcessTimes(h, &c, &e, &k, &u); err != nil && err != win32.ERROR_INVALID_HANDLE {
					t.Errorf("GetProcessTimes: %v", err)
				}
			}
		})
	}
	closers := sync.WaitGroup{}
	for range 2 {
		closers.Go(func() {
			for h := range handles {
				if err := win32.CloseHandle(h); err != nil {
					t.Errorf("CloseHandle(%#x): %v", h, err)
				}
			}
		})
	}
	wg.Wait()
	close(handles)
	closers.Wait()
}
