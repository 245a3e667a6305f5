package cputime_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Independent sources for cross-checks: getrusage and /proc read directly,
// never through the package under test.

func gettidForChild() int { return unix.Gettid() }

// threadRusage returns the calling thread's user+system time from
// getrusage(RUSAGE_THREAD): the kernel's adjusted split, in microseconds.
func threadRusage() time.Duration {
	u, s := rusage(unix.RUSAGE_THREAD)
	return u + s
}

func rusage(who int) (user, sys time.Duration) {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// schedstatRuntime reads the first field of /proc/pid/task/tid/schedstat:
// the thread's on-CPU time in nanoseconds.
func schedstatRuntime(t testing.TB, pid, tid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatalf("schedstat %q: %v", b, err)
	}
	return time.Duration(ns)
}

// listTasks lists /proc/pid/task directly.
func listTasks(t testing.TB, pid int) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[int]bool, len(entries))
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("task entry %q", e.Name())
		}
		m[tid] = true
	}
	return m
}
