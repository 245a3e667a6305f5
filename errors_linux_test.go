package cputime_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cputime/cputime"
)

// Library errors read as context and cause, each once, and still match the
// sentinel and the system's errno.
func TestErrorWording(t *testing.T) {
	const missing = 1<<22 + 1 // above pid_max's ceiling: never a task
	_, err1 := cputime.OpenProcess(missing)
	_, err2 := cputime.ProcessTimes(missing)
	_, err3 := cputime.ProcessInfoOf(missing)
	_, err4 := cputime.OpenThread(missing)
	for _, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, cputime.ErrNotFound) {
			t.Errorf("%v: not ErrNotFound", err)
			continue
		}
		if !errors.Is(err, syscall.ESRCH) && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%v: the errno is lost", err)
		}
		msg := err.Error()
		t.Log(msg)
		if strings.Contains(msg, "no such file or directory") || strings.Count(msg, "no such process") != 1 {
			t.Errorf("%q: want the cause once", msg)
		}
	}
}

// A thread id opened as a process fails with ErrNotFound, whichever way the
// kernel refuses it (pidfd_open says ENOENT or EINVAL for a thread that is
// not a group leader, depending on its version).
func TestOpenThreadIDAsProcess(t *testing.T) {
	tid := otherThreadOfSelf(t)
	_, err := cputime.OpenProcess(tid)
	if !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("OpenProcess(%d), a thread of this process: %v", tid, err)
	}
	t.Log(err)
}

func otherThreadOfSelf(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	for _, e := range entries {
		if id, _ := strconv.Atoi(e.Name()); id != os.Getpid() && id > 0 {
			return id
		}
	}
	t.Skip("no second thread in the test process")
	return 0
}
