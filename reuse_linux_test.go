package cputime_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// forkStopped starts /bin/true traced, so that it stops at its exec and
// its times stay put; it returns the pid and its start tick.
func forkStopped(t *testing.T) (pid int, start string) {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Ptrace: true}})
	if err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("traced child %d: %v, status %v", pid, err, ws)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return pid, strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))[19]
}

func killReap(pid int) {
	syscall.Kill(pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, syscall.WALL, nil)
}

// TestPIDReuseOneShots forces the kernel to hand a dead process's pid to a
// new process within the same clock tick, so that (pid, start tick) names
// both, and checks that no one-shot path reports the new process with the
// old one's times: its total must be its own CPU clock, which /proc's
// schedstat confirms, and its split must fit in it.
func TestPIDReuseOneShots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("steering pids through /proc/sys/kernel/ns_last_pid needs root")
	}
	runtime.LockOSThread() // ptrace: the tracer is this thread
	defer runtime.UnlockOSThread()
	sameTick := 0
	for attempt := 0; attempt < 200 && sameTick < 5; attempt++ {
		old, oldStart := forkStopped(t)
		// Read the old process through every one-shot path.
		if _, err := cputime.ProcessTimes(old); err != nil {
			t.Fatal(err)
		}
		// The new process's reads below are then second reads of the id:
		// the one-shots' pidfd path, whose memory is by pidfs inode.
		if _, err := cputime.ThreadTimes(old); err != nil {
			t.Fatal(err)
		}
		cputime.ProcessInfoOf(old)
		for range cputime.Threads(old) {
		}
		killReap(old)
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(old-1)), 0); err != nil {
			t.Skipf("cannot steer pids: %v", err)
		}
		pid, start := forkStopped(t)
		if pid != old || start != oldStart {
			killReap(pid)
			continue
		}
		sameTick++
		ss, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			t.Fatal(err)
		}
		own, _ := strconv.ParseInt(strings.Fields(string(ss))[0], 10, 64)
		check := func(path string, tm cputime.Times, err error) {
			if err != nil {
				t.Errorf("%s: %v", path, err)
				return
			}
			if tm.Total() != time.Duration(own) {
				t.Errorf("%s of the new process %d: user %v + kernel %v = %v, its own schedstat says %v",
					path, pid, tm.User, tm.Kernel, tm.Total(), time.Duration(own))
			}
		}
		tm, err := cputime.ProcessTimes(pid)
		check("ProcessTimes", tm, err)
		info, err := cputime.ProcessInfoOf(pid)
		check("ProcessInfoOf", info.Times, err)
		for th, err := range cputime.Threads(pid) {
			check("Threads", th.Times, err)
		}
		tm, err = cputime.ThreadTimes(pid)
		check("ThreadTimes", tm, err)
		killReap(pid)
	}
	if sameTick == 0 {
		t.Skip("the kernel never reused a pid within the same tick in 200 attempts")
	}
	t.Logf("%d same-tick reuses checked", sameTick)
}
