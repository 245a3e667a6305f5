package workload

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// ChurnThreads keeps n goroutines creating threads that end at once (a
// goroutine that exits locked takes its thread with it), until the test
// ends, and returns the count of threads created so far. Under such churn
// the kernel's listing of /proc/PID/task can leave out a thread alive
// throughout: it resumes each getdents batch by position, and the exits
// shift the positions.
func ChurnThreads(tb testing.TB, n int) (created *atomic.Int64) {
	created = new(atomic.Int64)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	tb.Cleanup(func() { close(stop); wg.Wait() })
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := make(chan struct{})
				go func() {
					runtime.LockOSThread()
					close(done)
				}()
				<-done
				created.Add(1)
			}
		})
	}
	return created
}

// StayingThread starts a thread that lives until the test ends, and
// returns its id. Created amid ChurnThreads, it sits after short-lived
// threads in the kernel's thread list, where a listing can skip it.
func StayingThread(tb testing.TB) int {
	tid := make(chan int)
	release := make(chan struct{})
	tb.Cleanup(func() { close(release) })
	go func() {
		runtime.LockOSThread()
		tid <- unix.Gettid()
		<-release
	}()
	return <-tid
}
