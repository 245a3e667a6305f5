package cputime_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// BenchmarkWait measures what Wait costs:
//
//   - idle/N: the CPU the calling process uses (getrusage) per second of
//     wall time, as the metric cpu-ns/s, while N goroutines are blocked in
//     Wait on an idle process; idle/0 is the benchmark's own cost. ns/op is
//     the 100 ms each iteration sleeps, and means nothing.
//   - exited: one Wait on a handle whose task has exited (returns at once).
//   - thread-exit: open a handle to a new thread of ours, let the thread
//     end, Wait: mostly thread creation, plus the delay between the exit and
//     Wait's return, which is what differs with and without pidfds.
func BenchmarkWait(b *testing.B) {
	modes := []struct {
		name string
		o    opener
	}{{"pidfd", api{}}, {"nopidfd", cputime.NewEngine(cputime.EngineConfig{NoPidfd: true})}}
	for _, m := range modes {
		for _, waiters := range []int{0, 1000} {
			b.Run(fmt.Sprintf("%s/idle/%d", m.name, waiters), func(b *testing.B) {
				c := startChild(b, "idle")
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				for range waiters {
					h := mustOpenProcessBy(b, m.o, c.pid())
					go h.Wait(ctx)
				}
				time.Sleep(time.Second) // every waiter blocked, any poller at its idle pace
				cpu0, wall0 := processCPU(), time.Now()
				for b.Loop() {
					time.Sleep(100 * time.Millisecond)
				}
				cpu, wall := processCPU()-cpu0, time.Since(wall0)
				b.ReportMetric(float64(cpu)/wall.Seconds(), "cpu-ns/s")
			})
		}
		b.Run(m.name+"/exited", func(b *testing.B) {
			c := startChild(b, "idle")
			h := mustOpenProcessBy(b, m.o, c.pid())
			c.stdin.Close()
			ctx := context.Background()
			if err := h.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(m.name+"/thread-exit", func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				tid, proceed := lockedThread()
				h, err := m.o.OpenThread(tid)
				if err != nil {
					b.Fatal(err)
				}
				close(proceed)
				if err := h.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				h.Close()
			}
		})
	}
}

// lockedThread starts a goroutine locked to its thread, which ends when
// proceed is closed; never the main thread, which the runtime keeps.
func lockedThread() (tid int, proceed chan struct{}) {
	for {
		tids := make(chan int)
		proceed := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			tids <- cputime.CurrentThreadID()
			<-proceed
		}()
		if tid := <-tids; tid != os.Getpid() {
			return tid, proceed
		}
		close(proceed)
	}
}
