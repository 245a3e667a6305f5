package cputime_test

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// Reproduce the notes' table with:
//
//	go test -run '^$' -bench 'CycleTime|IdleProcessor' -benchmem -count 10 . | tee cycles.txt && benchstat cycles.txt

func BenchmarkThreadCycleTime(b *testing.B) {
	refFreq(b) // calibrate outside the timed loops
	b.Run("own/pseudo", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		benchCycles(b, cputime.CurrentThread().CycleTime)
	})
	b.Run("own/handle", func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h := mustOpenThread(b, unix.Gettid())
		benchCycles(b, h.CycleTime)
	})
	b.Run("other/handle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenThread(b, c.tid)
		benchCycles(b, h.CycleTime)
	})
}

func BenchmarkProcessCycleTime(b *testing.B) {
	refFreq(b)
	b.Run("self/pseudo", func(b *testing.B) {
		benchCycles(b, cputime.CurrentProcess().CycleTime)
	})
	b.Run("other/handle", func(b *testing.B) {
		c := startChild(b, "idle")
		h := mustOpenProcess(b, c.pid())
		benchCycles(b, h.CycleTime)
	})
	b.Run("other/oneshot", func(b *testing.B) {
		c := startChild(b, "idle")
		benchCycles(b, func() (uint64, error) { return cputime.ProcessCycleTime(c.pid()) })
	})
}

func benchCycles(b *testing.B, read func() (uint64, error)) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := read(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIdleProcessorCycleTimes(b *testing.B) {
	refFreq(b)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]uint64, 0, runtime.NumCPU()*2)
		for b.Loop() {
			var err error
			if buf, err = cputime.AppendIdleProcessorCycleTimes(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cputime.IdleProcessorCycleTimes(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
