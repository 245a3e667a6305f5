package recorder

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/workload"
)

// The test binary doubles as the programs the tests record: with
// CPUTIME_RECORDER_HELPER set it does that job and exits. burn:MS, tree and
// threads:N:MS:K are internal/workload's Job; here also
//
//	mixed:N:MS     N threads alternating user-mode spinning and reads of
//	               /dev/zero until each has used MS ms, each printing
//	               "TID USER_NS KERNEL_NS" from RUSAGE_THREAD
func TestMain(m *testing.M) {
	job := os.Getenv(helperEnv)
	if job == "" {
		os.Exit(m.Run())
	}
	os.Unsetenv(helperEnv)
	workload.Job(job, helperEnv) // burn, tree and threads; returns for the others
	var n, ms int
	switch {
	case scan(job, "mixed:%d:%d", &n, &ms):
		// N threads at once, each alternating 200 µs of user-mode spinning
		// with reads of /dev/zero (kernel mode) until its clock reaches MS
		// ms, then printing "TID USER_NS KERNEL_NS" from getrusage
		// (RUSAGE_THREAD: the kernel's own split of its exact time).
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				f, err := os.Open("/dev/zero")
				if err != nil {
					os.Exit(93)
				}
				buf := make([]byte, 64<<10)
				for clock(unix.CLOCK_THREAD_CPUTIME_ID) < time.Duration(ms)*time.Millisecond {
					burn(unix.CLOCK_THREAD_CPUTIME_ID, clock(unix.CLOCK_THREAD_CPUTIME_ID)+200*time.Microsecond)
					for range 8 {
						f.Read(buf)
					}
				}
				var ru unix.Rusage
				unix.Getrusage(unix.RUSAGE_THREAD, &ru)
				mu.Lock()
				fmt.Println(unix.Gettid(), ru.Utime.Nano(), ru.Stime.Nano())
				mu.Unlock()
			}()
		}
		wg.Wait()
	default:
		os.Exit(92)
	}
	os.Exit(0)
}

const helperEnv = "CPUTIME_RECORDER_HELPER"

func scan(s, format string, args ...any) bool {
	_, err := fmt.Sscanf(s, format, args...)
	return err == nil
}

func helper(job string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+job, "GORACE=atexit_sleep_ms=0")
	c.Stderr = os.Stderr
	return c
}

func clock(id int32) time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(id, &ts)
	return time.Duration(ts.Nano())
}

func burn(id int32, until time.Duration) {
	for clock(id) < until {
	}
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

var _ = strconv.Itoa
