package taskstats

import (
	"math"
	"testing"
)

// Each fixture record, laid out as its kernel sends it and decoded, gives
// the times its fields say: the exact total where delay accounting filled
// it, the ticks otherwise, and a kernel thread told apart only where the
// record can tell (version 12 on: no executable, kthreadd's child).
func TestTimesOfRecord(t *testing.T) {
	kthread := v16Thread
	kthread.comm, kthread.pid, kthread.ppid, kthread.tgid = "kworker/u4:1", 812, kthreadd, 812
	kthread.exeDev, kthread.exeInode, kthread.utime, kthread.stime = 0, 0, 0, 0
	kthread.runReal, kthread.runVirtual = 0, 734000

	noDelayAcct := v16Thread
	noDelayAcct.runReal, noDelayAcct.runVirtual = 0, 0

	tests := []struct {
		name string
		f    fixture
		want Times
	}{
		{"user thread", v16Thread,
			Times{Total: 51234567, Exact: true, UTime: 40000, STime: 8000}},
		{"kernel thread without ticks", kthread,
			Times{Total: 734000, Exact: true, KThread: true}},
		{"kernel thread, version 15 layout", with(kthread, func(f *fixture) { f.v, f.size = 15, 656 }),
			Times{Total: 734000, Exact: true, KThread: true}},
		{"kthreadd itself", with(kthread, func(f *fixture) { f.pid, f.ppid, f.stime = kthreadd, 0, 10000 }),
			Times{Total: 734000, Exact: true, STime: 10000, KThread: true}},
		// A process record of a recent kernel (signal->stats): no ids, no
		// executable; never a kernel thread's.
		{"process record", fixture{v: 16, size: 560, runVirtual: 13432831, runReal: 16000000, stime: 16000},
			Times{Total: 13432831, Exact: true, STime: 16000}},
		// No executable but a user process's child: a task that never
		// exec'd or lost it is not taken for a kernel thread.
		{"no executable, parent not kthreadd", with(kthread, func(f *fixture) { f.ppid = 1 }),
			Times{Total: 734000, Exact: true}},
		{"an executable, parent kthreadd", with(kthread, func(f *fixture) { f.exeInode = 5 }),
			Times{Total: 734000, Exact: true}},
		// Before version 12 nothing tells a kernel thread.
		{"kernel thread, version 11", with(kthread, func(f *fixture) { f.v, f.size = 11, 360 }),
			Times{Total: 734000, Exact: true}},
		{"no delay accounting", noDelayAcct,
			Times{Total: 48000000, UTime: 40000, STime: 8000}},
		{"no delay accounting, never sampled", with(noDelayAcct, func(f *fixture) { f.utime, f.stime = 0, 0 }),
			Times{Exact: true}},
		{"tick sum past 2^64 ns", with(noDelayAcct, func(f *fixture) { f.utime = math.MaxUint64 / 1000 }),
			Times{Total: math.MaxUint64, UTime: math.MaxUint64 / 1000, STime: 8000}},
		{"tick sum past 2^64", with(noDelayAcct, func(f *fixture) { f.utime = math.MaxUint64 }),
			Times{Total: math.MaxUint64, UTime: math.MaxUint64, STime: 8000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := DecodeStats(tt.f.bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Times(); got != tt.want {
				t.Errorf("Times() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Sampled: evidence for the split is tick samples, or a kernel thread.
func TestTimesSampled(t *testing.T) {
	for _, tt := range []struct {
		t    Times
		want bool
	}{
		{Times{Total: 5}, false},
		{Times{Total: 5, UTime: 1}, true},
		{Times{Total: 5, STime: 1}, true},
		{Times{Total: 5, KThread: true}, true},
	} {
		if got := tt.t.Sampled(); got != tt.want {
			t.Errorf("%+v.Sampled() = %v, want %v", tt.t, got, tt.want)
		}
	}
}

func with(f fixture, change func(*fixture)) fixture {
	change(&f)
	return f
}
