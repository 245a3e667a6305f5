package win32_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/cputime/cputime/win32"
)

func TestCycleTimesGrow(t *testing.T) {
	skipOnWine(t, "QueryThreadCycleTime and QueryProcessCycleTime are stubs that fail in Wine 8")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var thread0, process0 uint64
	err := win32.QueryThreadCycleTime(win32.CurrentThread(), &thread0)
	skipIfNotImplemented(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if err := win32.QueryProcessCycleTime(win32.CurrentProcess(), &process0); err != nil {
		t.Fatal(err)
	}
	h := opened(t)(win32.OpenThread(win32.THREAD_QUERY_LIMITED_INFORMATION, false, win32.GetCurrentThreadId()))
	last := thread0
	for range 5 {
		spinFor(2 * time.Millisecond)
		var c uint64
		if err := win32.QueryThreadCycleTime(h, &c); err != nil {
			t.Fatal(err)
		}
		if c <= last {
			t.Errorf("thread cycle time went from %d to %d over a busy loop", last, c)
		}
		last = c
	}
	var process1 uint64
	if err := win32.QueryProcessCycleTime(win32.CurrentProcess(), &process1); err != nil {
		t.Fatal(err)
	}
	if process1 <= process0 || process1 < last {
		t.Errorf("process cycle time %d then %d; our thread alone used %d", process0, process1, last)
	}

	syncOnly := opened(t)(win32.OpenProcess(win32.SYNCHRONIZE, false, win32.GetCurrentProcessId()))
	if err := win32.QueryProcessCycleTime(syncOnly, &process1); err != win32.ERROR_ACCESS_DENIED {
		t.Errorf("QueryProcessCycleTime(SYNCHRONIZE only) = %v; want ERROR_ACCESS_DENIED", err)
	}
	if err := win32.QueryThreadCycleTime(win32.CurrentProcess(), &process1); err != win32.ERROR_INVALID_HANDLE {
		t.Errorf("QueryThreadCycleTime(process pseudo-handle) = %v; want ERROR_INVALID_HANDLE", err)
	}
}

func TestQueryIdleProcessorCycleTime(t *testing.T) {
	skipOnWine(t, "QueryIdleProcessorCycleTime is unimplemented in Wine 8: calling it aborts the process")
	var size uint32
	err := win32.QueryIdleProcessorCycleTime(&size, nil)
	skipIfNotImplemented(t, err)
	if err != win32.ERROR_BAD_LENGTH {
		t.Fatalf("QueryIdleProcessorCycleTime(&0, nil) = %v; want ERROR_BAD_LENGTH", err)
	}
	if size == 0 || size%8 != 0 {
		t.Fatalf("buffer length needed: %d bytes; want a positive multiple of 8", size)
	}
	n := int(size / 8)
	if n < runtime.NumCPU() {
		t.Errorf("%d processors listed, runtime.NumCPU says %d", n, runtime.NumCPU())
	}

	buf := make([]uint64, n+1) // one spare entry, which must stay untouched
	buf[n] = 12345
	small := size - 8
	if err := win32.QueryIdleProcessorCycleTime(&small, &buf[0]); err != win32.ERROR_BAD_LENGTH || small != size {
		t.Errorf("too small a buffer: %v, length %d; want ERROR_BAD_LENGTH, %d", err, small, size)
	}
	length := uint32(len(buf) * 8)
	if err := win32.QueryIdleProcessorCycleTime(&length, &buf[0]); err != nil {
		t.Fatal(err)
	}
	if length != size || buf[n] != 12345 {
		t.Errorf("wrote %d bytes (spare entry %d); want %d bytes", length, buf[n], size)
	}
	first := append([]uint64(nil), buf[:n]...)
	time.Sleep(20 * time.Millisecond)
	if err := win32.QueryIdleProcessorCycleTime(&length, &buf[0]); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if buf[i] < first[i] {
			t.Errorf("CPU %d: idle cycles went from %d to %d", i, first[i], buf[i])
		}
	}
	// Whether any grew depends on the machine's load: not checked.
	t.Logf("idle cycles %v then %v", first, buf[:n])
}
