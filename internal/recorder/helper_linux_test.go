package recorder

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/workload"
)

// The test binary doubles as the programs the tests record: with
// CPUTIME_RECORDER_HELPER set it does that job (internal/workload's Job:
// burn:MS, tree, threads:N:MS:K, mixed:N:MS) and exits.
func TestMain(m *testing.M) {
	if mode := os.Getenv(startupEnv); mode != "" {
		os.Unsetenv(startupEnv)
		startupHelper(mode)
	}
	job := os.Getenv(helperEnv)
	if job == "" {
		os.Exit(m.Run())
	}
	os.Unsetenv(helperEnv)
	if job == "threadexec" {
		threadExec()
	}
	workload.Job(job, helperEnv)
	os.Exit(92) // not a job
}

const helperEnv = "CPUTIME_RECORDER_HELPER"

func helper(job string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+job, "GORACE=atexit_sleep_ms=0")
	c.Stderr = os.Stderr
	return c
}

// exitedNotReaped waits until pid has exited, leaving it a zombie.
func exitedNotReaped(t testing.TB, pid int) {
	t.Helper()
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

// threadExec burns 50 ms on the main thread, then execs sh (which burns a
// little and exits) from another thread: the kernel gives that thread the
// process's id, and the main thread exits.
func threadExec() {
	runtime.LockOSThread() // the main thread stays with this goroutine: the exec comes from another
	burnThread(50 * time.Millisecond)
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		burnThread(30 * time.Millisecond)
		done <- syscall.Exec("/bin/sh", []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"}, os.Environ())
	}()
	fmt.Fprintln(os.Stderr, <-done)
	os.Exit(93)
}

// burnThread spins until the calling thread has used d more CPU time.
func burnThread(d time.Duration) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	until := ts.Nano() + d.Nanoseconds()
	for ts.Nano() < until {
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	}
}
