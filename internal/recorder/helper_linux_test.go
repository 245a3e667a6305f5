package recorder

import (
	"os"
	"os/exec"
	"testing"

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
