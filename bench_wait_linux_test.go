package cputime_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// BenchmarkWait measures what Wait costs:
//
//   - idle: the CPU that goroutines blocked in Wait on an idle process
//     cost the caller, as the metric cpu-ns/waiter-s (getrusage of the
//     whole process over the run, per waiter and second of waiting); ns/op
//     is the 10 ms each iteration sleeps, and means nothing.
//   - exited: one Wait on a handle whose task has exited (returns at once).
//   - thread-exit: open a handle to a new thread of ours, let the thread
//     end, Wait: mostly thread creation, plus the delay between the exit and
//     Wait's return, which is what differs with and without pidfds.
func BenchmarkWait(b *testing.B) {
	modes := []struct {
		name  string
		pidfd bool
	}{{"pidfd", true}, {"nopidfd", false}}
	for _, m := range modes {
		b.Run(m.name+"/idle", func(b *testing.B) {
			defer cputime.SetUsePidfd(m.pidfd)()
			const waiters = 1000
			c := startChild(b, "idle")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for range waiters {
				h := mustOpenProcess(b, c.pid())
				go h.Wait(ctx)
			}
			time.Sleep(time.Second) // every waiter blocked, any poller at its idle pace
			cpu0, wall0 := processCPU(), time.Now()
			for b.Loop() {
				time.Sleep(10 * time.Millisecond)
			}
			cpu, wall := processCPU()-cpu0, time.Since(wall0)
			b.ReportMetric(float64(cpu)/waiters/wall.Seconds(), "cpu-ns/waiter-s")
		})
		b.Run(m.name+"/exited", func(b *testing.B) {
			defer cputime.SetUsePidfd(m.pidfd)()
			c := startChild(b, "idle")
			h := mustOpenProcess(b, c.pid())
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
			defer cputime.SetUsePidfd(m.pidfd)()
			ctx := context.Background()
			for b.Loop() {
				tid, proceed := lockedThread()
				h, err := cputime.OpenThread(tid)
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
