package cputime_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// A handle's Threads lists what /proc/PID/task lists (the kernel's own
// directory of the process's threads), each with its process's id, and
// nothing once the process has exited.
func TestProcessHandleThreads(t *testing.T) {
	c := startChild(t, "threads:5")
	h := mustOpenProcess(t, c.pid())
	// The child's Go runtime may start a thread at any moment: the
	// listing is compared with /proc's when /proc's was the same before
	// and after it.
	var got, want []int
	for try := 0; ; try++ {
		before := taskDir(t, c.pid())
		got = got[:0]
		for info, err := range h.Threads() {
			if err != nil {
				t.Fatal(err)
			}
			if info.ProcessID != c.pid() {
				t.Errorf("thread %d listed with process %d, want %d", info.ID, info.ProcessID, c.pid())
			}
			got = append(got, info.ID)
		}
		want = taskDir(t, c.pid())
		if slices.Equal(before, want) || try == 20 {
			break
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("handle's Threads: %v; /proc/%d/task: %v", got, c.pid(), want)
	}

	c.cmd.Process.Signal(syscall.SIGKILL)
	if err := waitExited(t, h); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait() // reaped: the id is free for another process now
	for info, err := range h.Threads() {
		t.Errorf("an exited process's handle listed thread %d (err %v)", info.ID, err)
	}
}

// Exited says false while the process runs and true once the kernel has
// the child as a zombie (its state in /proc/PID/stat), without blocking;
// Wait returns at once after it said true.
func TestProcessExited(t *testing.T) {
	c := startChild(t, "idle")
	h := mustOpenProcess(t, c.pid())
	if exited, err := h.Exited(); err != nil || exited {
		t.Fatalf("Exited() of a running child = %v, %v", exited, err)
	}
	if exited, err := cputime.CurrentProcess().Exited(); err != nil || exited {
		t.Fatalf("CurrentProcess().Exited() = %v, %v", exited, err)
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	// The kernel's word that the child is gone: its state Z, before reaping.
	deadline := time.Now().Add(20 * time.Second)
	for procState(t, c.pid()) != 'Z' {
		if time.Now().After(deadline) {
			t.Fatal("the killed child never became a zombie")
		}
		time.Sleep(time.Millisecond)
	}
	// The kernel marks the task a zombie just before it wakes its pidfd's
	// pollers: Exited may say false for an instant after the Z.
	if err := waitExited(t, h); err != nil {
		t.Fatalf("Exited() of a zombie child: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Wait(ctx); err != nil {
		t.Fatalf("Wait after Exited said true: %v", err)
	}
	h.Close()
	if _, err := h.Exited(); err == nil {
		t.Error("Exited on a closed handle: no error")
	}
}

// Exited of a thread: false while it runs, for the calling thread.
func TestThreadExited(t *testing.T) {
	c := startChild(t, "threads:1")
	th := mustOpenThread(t, c.tid)
	if exited, err := th.Exited(); err != nil || exited {
		t.Fatalf("Exited() of a live thread = %v, %v", exited, err)
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		exited, err := th.Exited()
		if err != nil {
			t.Fatal(err)
		}
		if exited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed process's thread never read as exited")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitExited polls Exited until it says true, for at most 20 s.
func waitExited(t *testing.T, h *cputime.Process) error {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		exited, err := h.Exited()
		if err != nil || exited {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed child never read as exited")
		}
	}
}

// taskDir lists /proc/pid/task, sorted.
func taskDir(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// procState is the state letter of /proc/pid/stat.
func procState(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	i := len(b) - 1
	for i > 0 && b[i] != ')' {
		i--
	}
	return b[i+2]
}
