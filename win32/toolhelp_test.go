package win32_test

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cputime/cputime/win32"
)

func TestToolhelpThreads(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid, pid := win32.GetCurrentThreadId(), win32.GetCurrentProcessId()
	// The processId argument does not narrow a thread snapshot.
	snap, err := win32.CreateToolhelp32Snapshot(win32.TH32CS_SNAPTHREAD, pid)
	skipIfNotImplemented(t, err)
	snap = opened(t)(snap, err)

	var te win32.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te)) - 1
	checkBadLength(t, "Thread32First", win32.Thread32First(snap, &te))
	te.Size = uint32(unsafe.Sizeof(te))
	found, others, n := false, 0, 0
	for err = win32.Thread32First(snap, &te); err == nil; err = win32.Thread32Next(snap, &te) {
		n++
		if te.ThreadID == tid {
			found = true
			if te.OwnerProcessID != pid {
				t.Errorf("our thread %d listed with owner %d; want %d", tid, te.OwnerProcessID, pid)
			}
		}
		if te.OwnerProcessID != pid {
			others++
		}
	}
	if err != win32.ERROR_NO_MORE_FILES {
		t.Errorf("walk ended with %v; want ERROR_NO_MORE_FILES", err)
	}
	if err := win32.Thread32Next(snap, &te); err != win32.ERROR_NO_MORE_FILES {
		t.Errorf("Thread32Next past the end = %v; want ERROR_NO_MORE_FILES", err)
	}
	if !found {
		t.Errorf("our thread %d is not among the %d threads of the snapshot", tid, n)
	}
	if others == 0 {
		t.Errorf("no thread of another process among %d: a thread snapshot lists the whole system", n)
	}
	// First starts the walk again.
	if err := win32.Thread32First(snap, &te); err != nil {
		t.Errorf("Thread32First again: %v", err)
	}
	t.Logf("%d threads, %d of other processes", n, others)
}

func TestToolhelpProcesses(t *testing.T) {
	snap, err := win32.CreateToolhelp32Snapshot(win32.TH32CS_SNAPPROCESS, 0)
	skipIfNotImplemented(t, err)
	snap = opened(t)(snap, err)
	pid := win32.GetCurrentProcessId()

	var pe win32.ProcessEntry32
	checkBadLength(t, "Process32First", win32.Process32First(snap, &pe))
	pe.Size = uint32(unsafe.Sizeof(pe))
	found, n := false, 0
	for err = win32.Process32First(snap, &pe); err == nil; err = win32.Process32Next(snap, &pe) {
		n++
		if pe.ProcessID != pid {
			continue
		}
		found = true
		if pe.ParentProcessID != uint32(os.Getppid()) {
			t.Errorf("our parent listed as %d; os.Getppid says %d", pe.ParentProcessID, os.Getppid())
		}
		if pe.Threads < 1 {
			t.Errorf("our process listed with %d threads", pe.Threads)
		}
		if pe.ExeFile[0] == 0 {
			t.Errorf("our process listed without a name")
		}
	}
	if err != win32.ERROR_NO_MORE_FILES {
		t.Errorf("walk ended with %v; want ERROR_NO_MORE_FILES", err)
	}
	if !found {
		t.Errorf("our process %d is not among the %d of the snapshot", pid, n)
	}
	// A snapshot of processes only has no threads.
	te := win32.ThreadEntry32{Size: uint32(unsafe.Sizeof(win32.ThreadEntry32{}))}
	if err := win32.Thread32First(snap, &te); err != win32.ERROR_NO_MORE_FILES {
		t.Errorf("Thread32First on a process snapshot = %v; want ERROR_NO_MORE_FILES", err)
	}
}

// checkBadLength checks the error of a Toolhelp call given too small a Size:
// ERROR_BAD_LENGTH on Windows. Wine 8 answers ERROR_INSUFFICIENT_BUFFER
// instead, which is accepted there, and only there.
func checkBadLength(t *testing.T, call string, err error) {
	t.Helper()
	if runningOnWine() && err == win32.ERROR_INSUFFICIENT_BUFFER {
		t.Logf("%s with too small a Size: Wine answers ERROR_INSUFFICIENT_BUFFER where Windows answers ERROR_BAD_LENGTH", call)
		return
	}
	if err != win32.ERROR_BAD_LENGTH {
		t.Errorf("%s with too small a Size = %v; want ERROR_BAD_LENGTH", call, err)
	}
}
