package cputime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/cputime/cputime"
)

// The times of a process: GetProcessTimes, in Go types.
func ExampleProcessTimes() {
	t, err := cputime.ProcessTimes(os.Getpid())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("started %s ago, user %v, kernel %v\n",
		time.Since(t.Creation).Round(time.Millisecond), t.User, t.Kernel)
}

// Measuring the CPU time of a piece of Go code. Only time spent on the
// goroutine's thread counts: work the code hands to other goroutines, and
// runtime work such as garbage collection on other threads, does not.
func ExampleMeasure() {
	usage, err := cputime.Measure(work)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("user %v, kernel %v\n", usage.User, usage.Kernel)
}

// Repeated reads of one thread: a handle, opened once.
func ExampleOpenThread() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	th, err := cputime.OpenThread(cputime.CurrentThreadID())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer th.Close()

	before, _ := th.Times()
	work()
	after, _ := th.Times()
	fmt.Printf("user %v, kernel %v\n", after.User-before.User, after.Kernel-before.Kernel)
}

// A child's exact final times and its exit instant: wait on the handle
// before exec.Cmd.Wait reaps the child.
func ExampleProcess_Wait() {
	cmd := exec.Command("sleep", "0.1")
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	h, err := cputime.OpenProcess(cmd.Process.Pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	if err := h.Wait(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	t, _ := h.Times()
	cmd.Wait()
	fmt.Printf("ran %v, user %v, kernel %v\n", t.Exit.Sub(t.Creation), t.User, t.Kernel)
}

func work() {
	x := 0
	for i := range 1_000_000 {
		x += i
	}
	_ = x
}

// Every thread of a process with its times, like a Toolhelp snapshot.
func ExampleThreads() {
	for th, err := range cputime.Threads(os.Getpid()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d %-15s user %v kernel %v\n", th.ID, th.Name, th.Times.User, th.Times.Kernel)
	}
}

// Errors are tested with errors.Is.
func ExampleProcessTimes_notFound() {
	_, err := cputime.ProcessTimes(1 << 30)
	fmt.Println(errors.Is(err, cputime.ErrNotFound) || errors.Is(err, cputime.ErrNotSupported))
	// Output: true
}

// Times as the four FILETIMEs of GetProcessTimes.
func ExampleTimes_Filetimes() {
	t := cputime.Times{
		Creation: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
		User:     1500 * time.Millisecond,
		Kernel:   250 * time.Microsecond,
	}
	creation, exit, kernel, user, err := t.Filetimes()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(uint64(creation), uint64(exit), uint64(kernel), uint64(user))
	// Output: 134398080000000000 0 2500 15000000
}

// Win32 access rights: a handle opened only to wait cannot read times, as
// on Windows.
func ExampleOpenProcessAccess() {
	h, err := cputime.OpenProcessAccess(os.Getpid(), cputime.Synchronize)
	if err == nil {
		defer h.Close()
		_, err = h.Times()
	}
	fmt.Println(errors.Is(err, cputime.ErrAccessDenied) || errors.Is(err, cputime.ErrNotSupported))
	// Output: true
}
