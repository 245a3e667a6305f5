package win32_test

import (
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/win32"
)

// Rights no call here uses are refused on Linux, whoever the caller is
// (root included): see OpenProcess.
func TestRightsLinuxCannotGrant(t *testing.T) {
	pid := win32.GetCurrentProcessId()
	for _, access := range []uint32{
		win32.PROCESS_VM_READ,
		win32.PROCESS_QUERY_INFORMATION | win32.PROCESS_VM_READ,
		win32.PROCESS_TERMINATE | win32.SYNCHRONIZE,
	} {
		if h, err := win32.OpenProcess(access, false, pid); err != win32.ERROR_ACCESS_DENIED {
			t.Errorf("OpenProcess(%#x) = %#x, %v; want ERROR_ACCESS_DENIED", access, h, err)
		}
	}
	// A missing process is still ERROR_INVALID_PARAMETER, as on Windows.
	if _, err := win32.OpenProcess(win32.PROCESS_VM_READ, false, nonexistentID); err != win32.ERROR_INVALID_PARAMETER {
		t.Errorf("OpenProcess(PROCESS_VM_READ, nonexistent) = %v; want ERROR_INVALID_PARAMETER", err)
	}
	if h, err := win32.OpenThread(0x0001 /* THREAD_TERMINATE */, false, mainThreadID); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("OpenThread(THREAD_TERMINATE) = %#x, %v; want ERROR_ACCESS_DENIED", h, err)
	}
	// No rights at all is a valid, useless handle, as on Windows.
	h := opened(t)(win32.OpenProcess(0, false, pid))
	var ft win32.Filetime
	if err := win32.GetProcessTimes(h, &ft, &ft, &ft, &ft); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("GetProcessTimes(no rights) = %v; want ERROR_ACCESS_DENIED", err)
	}
}

// Handles are multiples of 4 and a closed handle's number is not handed
// out again.
func TestHandleNumbers(t *testing.T) {
	seen := map[win32.Handle]bool{}
	for range 100 {
		h, err := win32.OpenProcess(win32.SYNCHRONIZE, false, win32.GetCurrentProcessId())
		if err != nil {
			t.Fatal(err)
		}
		if h == 0 || h%4 != 0 || seen[h] {
			t.Fatalf("handle %#x: zero, not a multiple of 4, or reused", h)
		}
		seen[h] = true
		if err := win32.CloseHandle(h); err != nil {
			t.Fatal(err)
		}
	}
}

// A wait in progress when its handle is closed fails with
// ERROR_INVALID_HANDLE instead of hanging.
func TestCloseDuringWait(t *testing.T) {
	c := startTestChild(t, "idle")
	h, err := win32.OpenProcess(win32.SYNCHRONIZE, false, c.pid())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		ev, err := win32.WaitForSingleObject(h, win32.INFINITE)
		if ev != win32.WAIT_FAILED {
			err = nil
		}
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	win32.CloseHandle(h)
	select {
	case err := <-done:
		if err != win32.ERROR_INVALID_HANDLE {
			t.Errorf("wait on a handle closed meanwhile = %v; want ERROR_INVALID_HANDLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after its handle was closed")
	}
}

// GetProcessTimes and GetThreadTimes through an open handle allocate no
// more than the cputime calls they make.
func TestTimesAllocations(t *testing.T) {
	pid := win32.GetCurrentProcessId()
	h := opened(t)(win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, pid))
	p, err := cputime.OpenProcess(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var c, e, k, u win32.Filetime
	ours := testing.AllocsPerRun(100, func() { win32.GetProcessTimes(h, &c, &e, &k, &u) })
	theirs := testing.AllocsPerRun(100, func() { p.Times() })
	if ours > theirs {
		t.Errorf("GetProcessTimes: %v allocations per call, cputime's Times %v", ours, theirs)
	}
	th := opened(t)(win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION, false, mainThreadID))
	tt, err := cputime.OpenThread(int(mainThreadID))
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close()
	ours = testing.AllocsPerRun(100, func() { win32.GetThreadTimes(th, &c, &e, &k, &u) })
	theirs = testing.AllocsPerRun(100, func() { tt.Times() })
	if ours > theirs {
		t.Errorf("GetThreadTimes: %v allocations per call, cputime's Times %v", ours, theirs)
	}
}

func BenchmarkGetProcessTimes(b *testing.B) {
	h, err := win32.OpenProcess(win32.PROCESS_QUERY_LIMITED_INFORMATION, false, win32.GetCurrentProcessId())
	if err != nil {
		b.Fatal(err)
	}
	defer win32.CloseHandle(h)
	var c, e, k, u win32.Filetime
	b.ReportAllocs()
	for b.Loop() {
		if err := win32.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetThreadTimes(b *testing.B) {
	h, err := win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION, false, mainThreadID)
	if err != nil {
		b.Fatal(err)
	}
	defer win32.CloseHandle(h)
	var c, e, k, u win32.Filetime
	b.ReportAllocs()
	for b.Loop() {
		if err := win32.GetThreadTimes(h, &c, &e, &k, &u); err != nil {
			b.Fatal(err)
		}
	}
}
