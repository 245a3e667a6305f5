package cputime_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// The pidfd one-shot rests on pidfs giving each process's pidfds one inode
// number of their own: the same for two pidfds of one process, another for
// any other process, and never reused while the kernel runs (not testable;
// it is a 64-bit counter).
func TestPidfdInodeIdentifiesProcess(t *testing.T) {
	t.Parallel()
	if !cputime.NewEngine(cputime.EngineConfig{}).PidfdIdentities() {
		t.Skip("no pidfs (Linux 6.9) on a 64-bit kernel, or /proc is not this pid namespace's: the one-shot reads stat")
	}
	ino := func(pid int) uint64 {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	a, b := startChild(t, "idle"), startChild(t, "idle")
	if x, y := ino(a.pid()), ino(a.pid()); x != y {
		t.Errorf("two pidfds of process %d: inodes %d and %d", a.pid(), x, y)
	}
	if x, y := ino(a.pid()), ino(b.pid()); x == y {
		t.Errorf("processes %d and %d share pidfd inode %d", a.pid(), b.pid(), x)
	}
}

// A stopped process reads the same through the one-shot's pidfd path (its
// first read, which reads stat, and the later ones, which do not), its
// stat path and a handle, and its total is the sum of its threads'
// schedstat run times.
func TestOneShotPidfdAgreesWithStatPath(t *testing.T) {
	t.Parallel()
	e := cputime.NewEngine(cputime.EngineConfig{}) // nothing read before
	if !e.PidfdIdentities() {
		t.Skip("no pidfs (Linux 6.9) on a 64-bit kernel, or /proc is not this pid namespace's: the one-shot reads stat")
	}
	c, runtimes := stoppedMixedChild(t)
	var schedstat time.Duration
	for _, ns := range runtimes {
		schedstat += ns
	}
	h := mustOpenProcess(t, c.pid())
	want, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if want.Total() != schedstat {
		t.Fatalf("handle total %v, the threads' schedstat sum %v", want.Total(), schedstat)
	}
	// The first read takes the stat path; the second the pidfd path with
	// a read of stat; the third the pidfd path alone.
	for i := range 3 {
		viaPidfd, ok, viaStat, err := e.OneShotProcessBoth(c.pid())
		if err != nil || ok != (i > 0) {
			t.Fatalf("read %d: pidfd path taken %v, %v", i, ok, err)
		}
		answers := map[string]cputime.Times{"stat": viaStat}
		if ok {
			answers["pidfd"] = viaPidfd
		}
		for path, got := range answers {
			if !got.Creation.Equal(want.Creation) || got.User != want.User || got.Kernel != want.Kernel {
				t.Errorf("read %d by %s: %v %v %v; the handle: %v %v %v", i, path,
					got.Creation, got.User, got.Kernel, want.Creation, want.User, want.Kernel)
			}
		}
	}
	if want.Kernel == 0 || want.User == 0 {
		t.Logf("split %v user, %v kernel: one part empty, the evidence was not exercised", want.User, want.Kernel)
	}
}

// The pidfd path gives the stat path's errors: no such process, and a
// thread id that is not a process id.
func TestOneShotPidfdErrors(t *testing.T) {
	c := startChild(t, "threads:1")
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", c.pid()))
	for _, d := range dirs {
		tid, _ := strconv.Atoi(filepath.Base(d))
		if tid == c.pid() {
			continue
		}
		if _, err := cputime.ProcessTimes(tid); !errors.Is(err, cputime.ErrNotFound) {
			t.Errorf("ProcessTimes(thread %d): %v, want ErrNotFound", tid, err)
		}
	}
	dead := startChild(t, "idle")
	pid := dead.pid()
	dead.stop()
	if _, err := cputime.ProcessTimes(pid); !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("ProcessTimes(reaped %d): %v, want ErrNotFound", pid, err)
	}
}

// A thread reads the same through ThreadTimes' pidfd path (its first read,
// which reads stat, and the later ones, which do not), its stat path and a
// handle: a stopped process's thread, against its schedstat, and a blocked
// thread of this process.
func TestOneShotThreadPidfdAgreesWithStatPath(t *testing.T) {
	if !cputime.NewEngine(cputime.EngineConfig{}).PidfdIdentities() {
		t.Skip("no pidfs (Linux 6.9) on a 64-bit kernel, or /proc is not this pid namespace's: the one-shot reads stat")
	}
	_, runtimes := stoppedMixedChild(t)
	var busiest int
	var most time.Duration
	for tid, ns := range runtimes {
		if ns > most {
			busiest, most = tid, ns
		}
	}

	own := make(chan int)
	release := make(chan struct{})
	defer close(release)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		burnCPU(5 * time.Millisecond)
		own <- unix.Gettid()
		<-release
	}()
	ownTid := <-own
	time.Sleep(10 * time.Millisecond) // until it is blocked, off the CPU

	for _, tid := range []int{busiest, ownTid} {
		h := mustOpenThread(t, tid)
		want, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if tid == busiest && want.Total() != most {
			t.Fatalf("thread %d: handle total %v, its schedstat %v", tid, want.Total(), most)
		}
		e := cputime.NewEngine(cputime.EngineConfig{}) // nothing read before
		for i := range 3 {
			viaPidfd, ok, viaStat, err := e.OneShotThreadBoth(tid)
			if err != nil || ok != (i > 0) {
				t.Fatalf("thread %d, read %d: pidfd path taken %v, %v", tid, i, ok, err)
			}
			answers := map[string]cputime.Times{"stat": viaStat}
			if ok {
				answers["pidfd"] = viaPidfd
			}
			for path, got := range answers {
				if !got.Creation.Equal(want.Creation) || got.User != want.User || got.Kernel != want.Kernel {
					t.Errorf("thread %d, read %d by %s: %v %v %v; the handle: %v %v %v", tid, i, path,
						got.Creation, got.User, got.Kernel, want.Creation, want.User, want.Kernel)
				}
			}
		}
	}
}

// stoppedMixedChild starts a child whose two threads burn user and kernel
// time, lets them, stops it, and returns it with each thread's run time
// from its schedstat.
func stoppedMixedChild(t *testing.T) (*child, map[int]time.Duration) {
	c := startChild(t, "mixed:2")
	time.Sleep(50 * time.Millisecond) // let the threads put some user and kernel time on the clocks
	stopAndSettle(t, c.pid())
	runtimes := map[int]time.Duration{}
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", c.pid()))
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/schedstat")
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		tid, _ := strconv.Atoi(filepath.Base(d))
		runtimes[tid] = time.Duration(ns)
	}
	return c, runtimes
}
