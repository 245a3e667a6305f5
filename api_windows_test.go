package cputime_test

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/winapi"
)

// Errors wrap both the sentinel and the Windows error code.
func TestWindowsErrorsWrapErrno(t *testing.T) {
	_, err := cputime.OpenProcess(nonexistentID)
	if !errors.Is(err, cputime.ErrNotFound) || !errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		t.Errorf("OpenProcess of a nonexistent id: %v", err)
	}
	_, err = cputime.OpenThread(nonexistentID)
	if !errors.Is(err, cputime.ErrNotFound) || !errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		t.Errorf("OpenThread of a nonexistent id: %v", err)
	}
}

// The package's answers are the native calls': the same values as
// GetProcessTimes and GetThreadTimes made directly.
func TestWindowsTimesAreNative(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(windows.CurrentThread(), &c, &e, &k, &u); err != nil {
		t.Fatal(err)
	}
	got, err := cputime.CurrentThread().Times()
	if err != nil {
		t.Fatal(err)
	}
	if want := cputime.FiletimeFromParts(c.LowDateTime, c.HighDateTime).Time(); !got.Creation.Equal(want) {
		t.Errorf("thread creation %v, GetThreadTimes says %v", got.Creation, want)
	}
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		t.Fatal(err)
	}
	p, err := cputime.CurrentProcess().Times()
	if err != nil {
		t.Fatal(err)
	}
	if want := cputime.FiletimeFromParts(c.LowDateTime, c.HighDateTime).Time(); !p.Creation.Equal(want) {
		t.Errorf("process creation %v, GetProcessTimes says %v", p.Creation, want)
	}
	info, err := cputime.ProcessInfoOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !info.Times.Creation.Equal(p.Creation) {
		t.Errorf("process creation %v in the snapshot, %v from GetProcessTimes", info.Times.Creation, p.Creation)
	}
}

// Processes lists what a Toolhelp snapshot lists, taken just before: every
// process in it that is still running, with the same parent and name.
func TestWindowsProcessesMatchToolhelp(t *testing.T) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(snap)
	type entry struct {
		parent int
		name   string
	}
	toolhelp := map[int]entry{}
	pe := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &pe); err == nil; err = windows.Process32Next(snap, &pe) {
		toolhelp[int(pe.ProcessID)] = entry{int(pe.ParentProcessID), windows.UTF16ToString(pe.ExeFile[:])}
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		t.Fatal(err)
	}
	listed := map[int]cputime.ProcessInfo{}
	for info, err := range cputime.Processes() {
		if err != nil {
			t.Fatal(err)
		}
		listed[info.ID] = info
	}
	for pid, e := range toolhelp {
		if pid == 0 {
			continue // the Idle process, which Processes leaves out
		}
		info, ok := listed[pid]
		if !ok {
			if _, err := cputime.ProcessInfoOf(pid); errors.Is(err, cputime.ErrNotFound) {
				continue // exited meanwhile
			}
			t.Errorf("process %d (%s) is in the Toolhelp snapshot, not in Processes", pid, e.name)
			continue
		}
		if info.ParentID != e.parent || (info.Name != e.name && info.Name != "") {
			t.Errorf("process %d: Processes says parent %d, name %q; Toolhelp %d, %q", pid, info.ParentID, info.Name, e.parent, e.name)
		}
	}
}

func TestWindowsCycleCounterNotSupported(t *testing.T) {
	_, err := cputime.OpenThreadCycleCounter(cputime.CurrentThreadID())
	if !errors.Is(err, cputime.ErrNotSupported) {
		t.Errorf("OpenThreadCycleCounter: %v", err)
	}
	_, err = cputime.OpenProcessCycleCounter(os.Getpid())
	if !errors.Is(err, cputime.ErrNotSupported) {
		t.Errorf("OpenProcessCycleCounter: %v", err)
	}
}

// Under Wine, the package itself refuses to call
// QueryIdleProcessorCycleTime, which would abort the process.
func TestWindowsIdleUnderWine(t *testing.T) {
	if !underWine {
		t.Skip("not under Wine")
	}
	_, err := cputime.IdleProcessorCycleTimes()
	if !errors.Is(err, cputime.ErrNotSupported) {
		t.Errorf("IdleProcessorCycleTimes under Wine: %v", err)
	}
}

// TestThreadsReusesSnapshotBuffer: listing threads again and again (a
// sampler does every round) does not allocate a buffer of the whole
// system's processes and threads each time: the runtime's own count of
// bytes allocated stays far below one snapshot per call.
func TestThreadsReusesSnapshotBuffer(t *testing.T) {
	list := func() {
		for _, err := range cputime.Threads(os.Getpid()) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	list() // the first call sizes the buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const calls = 20
	for range calls {
		list()
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / calls
	t.Logf("%d bytes allocated per listing", per)
	if per > 64<<10 {
		t.Errorf("%d bytes allocated per listing of our threads: a snapshot buffer each time", per)
	}
}
