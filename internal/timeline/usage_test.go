package timeline

import (
	"math"
	"testing"
	"time"
)

// A make-style tree worked out by hand: sh runs three cc (two at once,
// one of them two-threaded), one of them still running at the end, and
// an ld; one child of sh execs cc, so it counts as cc.
func TestByCommandHandMade(t *testing.T) {
	thr := func(id int, from, to float64, cpu time.Duration) Thread {
		th := Thread{ID: id, Creation: at(from), User: cpu * 3 / 4, Kernel: cpu / 4}
		if to >= 0 {
			th.Exit = at(to)
		}
		return th
	}
	proc := func(id, parent int, name string, from, to float64, ts ...Thread) Process {
		p := Process{ID: id, Parent: parent, Name: name, Creation: at(from), Threads: ts}
		if to >= 0 {
			p.Exit = at(to)
		}
		for _, t := range ts {
			p.User += t.User
			p.Kernel += t.Kernel
		}
		return p
	}
	r := &Recording{Start: at(0), End: at(1000), Processes: []Process{
		proc(1, 0, "sh", 0, 1000, thr(1, 0, 1000, ms(4))),
		proc(2, 1, "cc", 10, 300, thr(2, 10, 300, ms(200)), thr(5, 20, 250, ms(100))),
		proc(3, 1, "cc", 100, 400, thr(3, 100, 400, ms(250))),
		// Created as 2 exits: not alive with it.
		proc(4, 1, "cc", 300, -1, thr(4, 300, -1, ms(500))),
		proc(6, 1, "ld", 400, 600, thr(6, 400, 600, ms(150))),
	}}
	got := ByCommand(r)
	want := []CommandUse{
		{Name: "cc", Processes: 3, Threads: 4, User: ms(1050) * 3 / 4, Kernel: ms(1050) / 4, PeakConcurrent: 2},
		{Name: "ld", Processes: 1, Threads: 1, User: ms(150) * 3 / 4, Kernel: ms(150) / 4, PeakConcurrent: 1},
		{Name: "sh", Processes: 1, Threads: 1, User: ms(3), Kernel: ms(1), PeakConcurrent: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("ByCommand = %+v, want %+v", got, want)
	}
	for i := range want {
		// Each process's threads' quarters, summed: within a ns each.
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Processes != w.Processes || g.Threads != w.Threads || g.PeakConcurrent != w.PeakConcurrent ||
			(g.User-w.User).Abs() > 4 || (g.Kernel-w.Kernel).Abs() > 4 {
			t.Errorf("ByCommand[%d] = %+v, want %+v", i, g, w)
		}
	}
	if ByCommand(nil) != nil {
		t.Error("ByCommand(nil) is not nil")
	}
}

// Every thread's CPU spread over its life, cross-checked against the
// timeline's own lanes (another computation of the same model), and the
// alive count against the hand-made spans.
func TestParallelismHandMade(t *testing.T) {
	r := &Recording{Start: at(0), End: at(1000), Processes: []Process{
		{ID: 1, Name: "a", Creation: at(0), Exit: at(1000), User: ms(1000) + ms(250), Threads: []Thread{
			{ID: 1, Name: "a", Creation: at(0), Exit: at(1000), User: ms(1000)},
			{ID: 2, Name: "a2", Creation: at(500), Exit: at(1000), User: ms(250)},
		}},
		{ID: 3, Parent: 1, Name: "b", Creation: at(0), Exit: at(1000), User: ms(250), Threads: []Thread{
			{ID: 3, Name: "b", Creation: at(0), Exit: at(1000), User: ms(250),
				Samples: []Sample{{At: at(250), CPU: ms(250)}}},
		}},
	}}
	pa := ParallelismOf(r)
	if math.Abs(pa.Average-1.5) > 1e-9 {
		t.Errorf("average %v, want 1.5", pa.Average)
	}
	if math.Abs(pa.Peak-2) > 1e-9 || pa.Window != ParallelismWindow {
		t.Errorf("peak %v over %v, want 2 over %v", pa.Peak, pa.Window, ParallelismWindow)
	}
	if pa.PeakThreads != 3 {
		t.Errorf("peak threads alive %d, want 3", pa.PeakThreads)
	}
	if !pa.FromSamples {
		t.Error("FromSamples false with a thread's samples")
	}
	pl, err := prepare(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4, 7, 100} {
		tree, _ := lanes(pl, n, 0, time.Second)
		lane, w := RunningLane(r, at(0), at(1000), time.Second/time.Duration(n), n)
		if len(lane) != n {
			t.Fatalf("%d windows of %v: lane of %d", n, w, len(lane))
		}
		for i := range tree {
			if math.Abs(tree[i]-lane[i]) > 1e-6 {
				t.Errorf("%d windows: RunningLane %v, the timeline's lanes %v", n, lane, tree)
				break
			}
		}
	}
	// More windows than allowed: they widen, and hold the same CPU.
	lane, w := RunningLane(r, at(0), at(1000), time.Millisecond, 10)
	if len(lane) != 10 || w != 100*time.Millisecond {
		t.Fatalf("capped lane: %d windows of %v, want 10 of 100ms", len(lane), w)
	}
	sum := 0.0
	for _, v := range lane {
		sum += v * w.Seconds()
	}
	if math.Abs(sum-1.5) > 1e-9 {
		t.Errorf("capped lane holds %v CPU-seconds, want 1.5", sum)
	}
}

// Eight tasks of 25 ms started together on two CPUs: each alive 100 ms,
// the CPU spread; the peak is the two CPUs, the alive count eight.
func TestParallelismEightOnTwo(t *testing.T) {
	r := &Recording{Start: at(0), End: at(110)}
	for i := range 8 {
		r.Processes = append(r.Processes, Process{ID: 10 + i, Name: "alpha", Creation: at(5), Exit: at(105), User: ms(25),
			Threads: []Thread{{ID: 10 + i, Creation: at(5), Exit: at(105), User: ms(25)}}})
	}
	pa := ParallelismOf(r)
	if math.Abs(pa.Peak-2) > 1e-9 || pa.PeakThreads != 8 || math.Abs(pa.Average-200.0/110) > 1e-9 || pa.FromSamples {
		t.Errorf("%+v: want peak 2, 8 alive, average %v, not from samples", pa, 200.0/110)
	}
	if bc := ByCommand(r); len(bc) != 1 || bc[0].PeakConcurrent != 8 || bc[0].Processes != 8 {
		t.Errorf("ByCommand = %+v", bc)
	}
}
