package workload

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// Job runs one of the programs the command's run tests record, if job
// names one, and then exits; otherwise it returns at once. env is the
// environment variable the caller's test binary reads its job from: a
// "tree" starts its children with it.
//
//	burn:MS  burn MS ms of the process's CPU time (GetProcessTimes)
//	tree     start 3 "burn:100" children, burn 20 ms, wait for them
//
// Before it exits, each process prints "burned PID USER_NS KERNEL_NS": its
// own times as it reads them itself, the independent source the tests
// check the job's figures against. (Wine answers a process's own times
// from times(2); another process's, it does not answer at all.)
func Job(job, env string) {
	switch {
	case job == "tree":
		var kids []*exec.Cmd
		for range 3 {
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), env+"=burn:100")
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			if c.Start() != nil {
				os.Exit(90)
			}
			kids = append(kids, c)
		}
		burn(20 * time.Millisecond)
		for _, c := range kids {
			if c.Wait() != nil {
				os.Exit(91)
			}
		}
	case strings.HasPrefix(job, "burn:"):
		ms, err := strconv.Atoi(strings.TrimPrefix(job, "burn:"))
		if err != nil {
			os.Exit(92)
		}
		burn(time.Duration(ms) * time.Millisecond)
	default:
		return
	}
	u, k := ownTimes()
	fmt.Printf("burned %d %d %d\n", os.Getpid(), u.Nanoseconds(), k.Nanoseconds())
	os.Exit(0)
}

// ownTimes is the process's own user and kernel time.
func ownTimes() (user, kernel time.Duration) {
	var c, e, k, u windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u) != nil {
		os.Exit(93)
	}
	ticks := func(f windows.Filetime) time.Duration {
		return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
	}
	return ticks(u), ticks(k)
}

// burn spins until the process has used d of CPU time.
func burn(d time.Duration) {
	for {
		u, k := ownTimes()
		if u+k >= d {
			return
		}
	}
}
