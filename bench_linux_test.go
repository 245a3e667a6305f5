package cputime_test

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// Reproduce the README's table with:
//
//	go test -run '^$' -bench . -benchmem -count 10 . | tee new.txt && benchstat new.txt

func BenchmarkProcessTimes(b *testing.B) {
	b.Run("other/handle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenProcess(b, c.pid())
		benchTimes(b, h.Times)
	})
	b.Run("other/oneshot", func(b *testing.B) {
		c := startChild(b, "idle")
		benchTimes(b, func() (cputime.Times, error) { return cputime.ProcessTimes(c.pid()) })
	})
	b.Run("self", func(b *testing.B) {
		benchTimes(b, cputime.CurrentProcess().Times)
	})
}

func BenchmarkThreadTimes(b *testing.B) {
	b.Run("own/handle", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h := mustOpenThread(b, unix.Gettid())
		benchTimes(b, h.Times)
	})
	b.Run("own/pseudo", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchTimes(b, cputime.CurrentThread().Times)
	})
	b.Run("other/handle/idle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenThread(b, c.tid)
		benchTimes(b, h.Times)
	})
	// A thread that runs all the time: every read finds its total moved and
	// reads both of its files.
	b.Run("other/handle/busy", func(b *testing.B) {
		c := startChild(b, "spin")
		h := mustOpenThread(b, c.tid)
		benchTimes(b, h.Times)
	})
}

// BenchmarkOpen opens a handle (pidfd, stat read, exit-watcher
// registration) and closes it.
func BenchmarkOpen(b *testing.B) {
	b.Run("process", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOpen(b, func() (interface{ Close() error }, error) { return cputime.OpenProcess(c.pid()) })
	})
	b.Run("process/query-information", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOpen(b, func() (interface{ Close() error }, error) {
			return cputime.OpenProcessAccess(c.pid(), cputime.ProcessQueryInformation)
		})
	})
	b.Run("thread/own", func(b *testing.B) {
		tid := unix.Gettid()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchOpen(b, func() (interface{ Close() error }, error) { return cputime.OpenThread(tid) })
	})
	b.Run("thread/other", func(b *testing.B) {
		c := startChild(b, "idle")
		benchOpen(b, func() (interface{ Close() error }, error) { return cputime.OpenThread(c.tid) })
	})
}

func benchOpen(b *testing.B, open func() (interface{ Close() error }, error)) {
	b.ReportAllocs()
	for b.Loop() {
		h, err := open()
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}

// BenchmarkMeasure is the overhead of measuring an empty region.
func BenchmarkMeasure(b *testing.B) {
	b.ReportAllocs()
	f := func() {}
	for b.Loop() {
		if _, err := cputime.Measure(f); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTimes(b *testing.B, read func() (cputime.Times, error)) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThreads enumerates every thread of a 1000-thread process with
// full records (name, creation, kernel and user time).
func BenchmarkThreads(b *testing.B) {
	b.Run("other/1000", func(b *testing.B) {
		c := startChild(b, "threads:1000")
		benchThreads(b, c.pid(), 1000)
	})
	b.Run("self", func(b *testing.B) {
		benchThreads(b, os.Getpid(), 1)
	})
}

func benchThreads(b *testing.B, pid, atLeast int) {
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range cputime.Threads(pid) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n < atLeast {
			b.Fatalf("%d threads, want at least %d", n, atLeast)
		}
	}
}

func BenchmarkProcesses(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range cputime.Processes() {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
