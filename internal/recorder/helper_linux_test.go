package recorder

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/testutil/workload"
)

// The test binary doubles as the programs the tests record: with
// CPUTIME_RECORDER_HELPER set it does that job (internal/testutil/workload's Job:
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
	if job == "reusepid" || job == "reusepidwait" {
		reusePID(job == "reusepidwait")
	}
	if job == "nocldwait" {
		noCldWait()
	}
	if job == "terminal" {
		terminalHelper()
	}
	if rest, ok := strings.CutPrefix(job, "burnas:"); ok { // burnas:PID:MS: burn only as that pid
		want, ms, _ := strings.Cut(rest, ":")
		if strconv.Itoa(os.Getpid()) != want {
			os.Exit(0)
		}
		job = "burn:" + ms
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

// reusePID starts a child burning 30 ms of its CPU clock and reaps it,
// then steers the next pid to the child's (root:
// /proc/sys/kernel/ns_last_pid) and starts children until one has that
// pid, which burns 60 ms; the others exit at once. Any task created on the
// machine between the steering and the fork takes the pid (a busy CI
// machine creates hundreds a second), so it tries up to 500 times within
// 30 s. For each child it prints "PID NS", its CPU time by wait4's rusage.
// With wait set it reads a line from its stdin before the steering (the
// test's neighbour takes the pid meanwhile).
func reusePID(wait bool) {
	child := func(job string) int {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"="+job, "GORACE=atexit_sleep_ms=0")
		if err := c.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(94)
		}
		ps := c.ProcessState
		fmt.Println(ps.Pid(), (ps.UserTime() + ps.SystemTime()).Nanoseconds())
		return ps.Pid()
	}
	pid := child("burn:30")
	if wait {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "reusepidwait:", err)
			os.Exit(98)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(95)
		}
		if child("burnas:"+strconv.Itoa(pid)+":60") == pid {
			os.Exit(0)
		}
	}
	holder, held := pidHolder(pid)
	fmt.Fprintf(os.Stderr, "no child got pid %d back in 500 tries or 30 s (%s)\n", pid, holder)
	if held {
		os.Exit(pidHeldExit)
	}
	os.Exit(96)
}

// pidHeldExit is reusePID's status when a task that lives on holds the
// pid it steers: no test can get it back, and the test skips.
const pidHeldExit = 99

// pidHolder names the task that has pid now, if any (held): one that
// lives on keeps a steered pid from anyone else.
func pidHolder(pid int) (_ string, held bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "no task has it now", false
	}
	var name, tgid string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Name:"); ok {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			tgid = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("now a task of process %s, %s", tgid, name), true
}

// noCldWait ignores SIGCHLD, so that the kernel reaps its children itself
// and adds none of their times to its own wait4 total, then runs a child
// burning 30 ms of its CPU clock to its end (its stdout closes at its
// exit) and exits.
func noCldWait() {
	signal.Ignore(syscall.SIGCHLD)
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"=burn:30", "GORACE=atexit_sleep_ms=0")
	out, err := c.StdoutPipe()
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(97)
	}
	io.Copy(io.Discard, out)
	// The child is gone without a zombie: wait4 has nothing to reap.
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOHANG, nil) == nil {
	}
	os.Exit(0)
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
