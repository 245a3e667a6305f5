package cputime_test

import (
	"errors"
	"fmt"
	"os"
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

// Measuring the CPU time of a piece of Go code: lock the goroutine to its
// thread, open a handle to that thread, and read it before and after. Only
// time spent on this thread counts: work the code hands to other goroutines,
// and runtime work such as garbage collection on other threads, does not.
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
