package jobtree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The test binary doubles as the programs these tests run, by the job
// named in helperEnv:
//
//	spawn      start a "sleep" child, print its id, exit
//	breakaway  start a "quick" child with CREATE_BREAKAWAY_FROM_JOB, print
//	           its id, wait for it, exit
//	waited     start a "quick" child, wait for it, print its id, sleep
//	           until stdin closes
//	sleep      sleep until the test kills it
//	quick      exit
const helperEnv = "CPUTIME_JOBTREE_HELPER"

func TestMain(m *testing.M) {
	if job := os.Getenv(helperEnv); job != "" {
		os.Exit(helper(job))
	}
	os.Exit(m.Run())
}

func helper(job string) int {
	child := func(job string, flags uint32) *exec.Cmd {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"="+job)
		c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
		return c
	}
	switch job {
	case "spawn":
		c := child("sleep", 0)
		if err := c.Start(); err != nil {
			return 91
		}
		fmt.Println(c.Process.Pid)
		return 0
	case "breakaway":
		c := child("quick", windows.CREATE_BREAKAWAY_FROM_JOB)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 92
		}
		fmt.Println(c.Process.Pid)
		if c.Wait() != nil {
			return 93
		}
		return 0
	case "waited":
		c := child("quick", 0)
		if c.Run() != nil { // Wait releases the child's handle
			return 95
		}
		fmt.Println(c.Process.Pid)
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "sleep":
		time.Sleep(time.Hour) // the test kills it
		return 0
	case "quick":
		return 0
	}
	return 94
}

func helperCmd(job string) *exec.Cmd {
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+job)
	return c
}

// run runs the helper job in a job and returns what it printed (one id)
// and the job's Result.
func run(t *testing.T, job string) (int, Result) {
	t.Helper()
	cmd := helperCmd(job)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd, true)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer tree.Close()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", job, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("%s printed %q", job, line)
	}
	r := tree.Finish()
	if r2 := tree.Finish(); len(r2.Processes) != len(r.Processes) {
		t.Errorf("Finish again: %d processes, first %d", len(r2.Processes), len(r.Processes))
	}
	return pid, r
}

// A descendant that outlives CMD is in the record, still running (no exit
// time), with CMD's id as its parent; the job counts both.
func TestOutlivingDescendant(t *testing.T) {
	pid, r := run(t, "spawn")
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		t.Fatalf("opening the sleeper %d: %v", pid, err)
	}
	defer windows.CloseHandle(h)
	defer windows.WaitForSingleObject(h, 10000)
	defer windows.TerminateProcess(h, 1)
	if len(r.Processes) != 2 || r.Joined != 2 || len(r.Missed) != 0 {
		t.Fatalf("want 2 processes, none missed: %+v", r)
	}
	top, kid := r.Processes[0], r.Processes[1]
	if kid.ID != pid || kid.Parent != top.ID || !kid.Exit.IsZero() || top.Exit.IsZero() {
		t.Errorf("top %+v, descendant %+v (want id %d, running)", top, kid, pid)
	}
	if kid.Creation.Before(top.Creation) || top.Creation.IsZero() {
		t.Errorf("descendant created %v, before its parent (%v)", kid.Creation, top.Creation)
	}
}

// A process created with CREATE_BREAKAWAY_FROM_JOB leaves the job, as it
// could without cputime: its creation succeeds, and it is not recorded.
func TestBreakaway(t *testing.T) {
	pid, r := run(t, "breakaway")
	for _, p := range r.Processes {
		if p.ID == pid {
			t.Errorf("the process that broke away (%d) is in the record: %+v", pid, r)
		}
	}
	if len(r.Processes) != 1 || r.Joined != 1 {
		t.Errorf("want only the top process: %+v", r)
	}
}

// A command that cannot start: its error, no process, no job left behind.
func TestStartNotFound(t *testing.T) {
	cmd := exec.Command(`C:\no\such\program.exe`)
	tree, err := Start(cmd, true)
	if tree != nil || cmd.Process != nil || err == nil || errors.Is(err, ErrNotSupported) {
		t.Fatalf("Start: %v, %v, process %v", tree, err, cmd.Process)
	}
	if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("error %v, want a not-found error", err)
	}
}

// A process that is gone before its handle opens is counted as missed,
// with its id, never left out silently: the monitor is held (beforeOpen)
// until the child has exited and its parent has let go of it.
func TestMissedProcess(t *testing.T) {
	release := make(chan struct{})
	beforeOpen = func(int) { <-release }
	defer func() { beforeOpen = nil }()
	cmd := helperCmd("waited")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := Start(cmd, true)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer tree.Close()
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		close(release)
		t.Fatalf("waited printed %q", line)
	}
	// The child has exited and been waited for; with no handle left, the
	// system destroys it. Wait until its id no longer opens.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
		if err != nil {
			break
		}
		windows.CloseHandle(h)
	}
	close(release)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	r := tree.Finish()
	if len(r.Missed) != 1 || r.Missed[0] != pid || len(r.Processes) != 1 || r.Joined != 2 {
		t.Errorf("want the child %d missed, the top recorded, 2 joined: %+v", pid, r)
	}
}

// mirrors tells Wine's GetProcessTimes of another process (the caller's own
// times) from Windows' (the process's, nothing before it ran) every time,
// while another goroutine burns CPU so that the caller's times move between
// the readings (which fools one comparison of one reading each).
func TestMirrors(t *testing.T) {
	c := helperCmd("sleep")
	c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(c.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; { // nonzero times of our own
	}
	wine := underWine()
	for i := range 300 {
		if got := mirrors(h); got != wine {
			t.Fatalf("call %d: mirrors = %v under Wine=%v", i, got, wine)
		}
		time.Sleep(time.Millisecond)
	}
}
