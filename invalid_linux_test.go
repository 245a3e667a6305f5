package cputime_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// fixtureTask writes /proc-like files for thread tid of process pid under
// root.
func fixtureTask(t *testing.T, root string, pid, tid int, stat, schedstat string) string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid), "task", fmt.Sprint(tid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if stat != "" {
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if schedstat != "" {
		if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(schedstat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// statLineFor builds a stat line with the given pid, name, start time and
// tick counts, as Linux 6.x prints it.
func statLineFor(pid int, name string, utime, stime, start uint64) string {
	return fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 1 0 %d 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, name, pid, pid, utime, stime, start)
}

// uptimeTicks is CLOCK_BOOTTIME in USER_HZ ticks, read directly.
func uptimeTicks(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano()) / 1e7
}

// Values the kernel could not have produced fail that read with
// ErrInvalidData, through a fixture tree; reads of files that are not
// regular never block or grow without bound.
func TestImpossibleValuesRefused(t *testing.T) {
	t.Parallel()
	const pid = 4194303 // PID_MAX_LIMIT-1: no real process has it here
	up := uptimeTicks(t)
	cases := []struct {
		name            string
		stat, schedstat string
	}{
		{"runtime 2^64-1", statLineFor(pid, "x", 1, 1, up-100), "18446744073709551615 0 0\n"},
		{"runtime beyond the thread's age", statLineFor(pid, "x", 1, 1, up-100), fmt.Sprintf("%d 0 0\n", uint64(30*time.Second))},
		{"start time in the future", statLineFor(pid, "x", 1, 1, up+100_000), "1000 0 0\n"},
		{"start time 10^12 ticks", statLineFor(pid, "x", 1, 1, 1e12), "1000 0 0\n"},
		{"pid 0", statLineFor(0, "x", 1, 1, up-100), "1000 0 0\n"},
		{"tick counts that overflow", statLineFor(pid, "x", 1<<63, 1<<63, up-100), "1000 0 0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			fixtureTask(t, root, pid, pid, c.stat, c.schedstat)
			n := 0
			for th, err := range cputime.NewEngine(cputime.EngineConfig{ProcRoot: root}).Threads(pid) {
				n++
				if err == nil {
					t.Errorf("accepted: %+v", th)
				} else if !errors.Is(err, cputime.ErrInvalidData) {
					t.Errorf("error %v does not wrap ErrInvalidData", err)
				}
			}
			if n == 0 {
				t.Error("the thread was skipped, not refused")
			}
		})
	}
	// The same tree with sane values is read: the refusals above are the
	// values', not the fixture's.
	root := t.TempDir()
	fixtureTask(t, root, pid, pid, statLineFor(pid, "x", 3, 1, up-100), "40000000 0 0\n")
	for th, err := range cputime.NewEngine(cputime.EngineConfig{ProcRoot: root}).Threads(pid) {
		if err != nil {
			t.Errorf("sane fixture: %v", err)
		} else if th.Times.User != 30*time.Millisecond || th.Times.Kernel != 10*time.Millisecond {
			t.Errorf("sane fixture: user %v kernel %v, want 30ms 10ms", th.Times.User, th.Times.Kernel)
		}
	}
}

func TestNonRegularProcFiles(t *testing.T) {
	const pid = 4194303
	for _, kind := range []string{"fifo", "/dev/zero"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			dir := fixtureTask(t, root, pid, pid, "", "1000 0 0\n")
			if kind == "fifo" {
				if err := syscall.Mkfifo(filepath.Join(dir, "stat"), 0o644); err != nil {
					t.Skip(err)
				}
			} else if err := os.Symlink("/dev/zero", filepath.Join(dir, "stat")); err != nil {
				t.Fatal(err)
			}
			e := cputime.NewEngine(cputime.EngineConfig{ProcRoot: root})
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			done := make(chan error, 1)
			go func() {
				var last error
				for _, err := range e.Threads(pid) {
					last = err
				}
				done <- last
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Error("a non-regular stat file was read as a thread")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("reading a non-regular stat file blocked")
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grown := after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc); grown > 16<<20 {
				t.Errorf("the heap grew by %d bytes", grown)
			}
		})
	}
}
