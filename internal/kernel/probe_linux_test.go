package kernel

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The probe says what a poll of the pidfd says: not exited while the
// process runs, even as its threads come and go (each thread's exit wakes
// pidfd waiters on recent kernels), exited as soon as /proc shows the
// zombie, and PidfdState then tells exited from gone.
func TestExitProbeAgreesWithPoll(t *testing.T) {
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Skipf("no pidfds: %v", err)
	}
	defer unix.Close(self)
	probe, err := OpenExitProbe(self)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(probe)
	for i := range 200 {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
			close(done)
		}()
		<-done
		if ProbeExited(probe) {
			st, _ := PidfdState(self)
			t.Fatalf("after %d thread exits, the probe of this running process says exited (the poll says %v)", i+1, st)
		}
	}

	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Skipf("sleep: %v", err)
	}
	pid := cmd.Process.Pid
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	p, err := OpenExitProbe(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p)
	if ProbeExited(p) {
		t.Fatal("the probe of a running child says exited")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d never became a zombie", pid)
		}
		time.Sleep(time.Millisecond)
	}
	// The kernel sets the zombie state and wakes the pidfd in one section
	// under tasklist_lock (exit_notify), which /proc's reader does not
	// take: the wakeup may follow what /proc shows by that section's
	// length, never by more.
	for !ProbeExited(p) {
		if time.Now().After(deadline) {
			t.Fatal("the probe of a zombie says running")
		}
		time.Sleep(time.Millisecond)
	}
	if st, err := PidfdState(fd); err != nil || st != TaskExited {
		t.Errorf("PidfdState of a zombie: %v, %v; want exited", st, err)
	}
	cmd.Wait()
	if !ProbeExited(p) {
		t.Error("the probe of a reaped child says running")
	}
	if st, err := PidfdState(fd); err != nil || st != TaskGone {
		t.Errorf("PidfdState of a reaped child: %v, %v; want gone", st, err)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
