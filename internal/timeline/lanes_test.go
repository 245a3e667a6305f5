package timeline

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The lanes against figures worked out by hand: a thread busy all its
// second, one busy half of its last half second, one whose samples say it
// used all its CPU in its first quarter.
func TestLanes(t *testing.T) {
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
	pl, err := prepare(r)
	if err != nil {
		t.Fatal(err)
	}
	tree, procs := lanes(pl, 4, 0, time.Second)
	want := map[string][]float64{
		"tree": {2, 1, 1.5, 1.5},
		"a":    {1, 1, 1.5, 1.5},
		"b":    {1, 0, 0, 0},
	}
	got := map[string][]float64{"tree": tree, "a": procs[0], "b": procs[1]}
	for k, w := range want {
		for i := range w {
			if math.Abs(got[k][i]-w[i]) > 1e-9 {
				t.Errorf("%s lane = %v, want %v", k, got[k], w)
				break
			}
		}
	}
	// The lanes hold every thread's CPU: their integral is the tree's CPU.
	sum := 0.0
	for _, v := range tree {
		sum += v * 0.25
	}
	if math.Abs(sum-1.5) > 1e-9 {
		t.Errorf("tree lane integrates to %v CPU-seconds, want 1.5", sum)
	}
	if s := laneScale(tree); s != 2 {
		t.Errorf("scale %v, want 2", s)
	}
	if s := laneScale([]float64{0, 0.2}); s != 1 {
		t.Errorf("scale of an idle lane %v, want 1", s)
	}
	// A zoomed span: the last quarter alone, in two buckets.
	tree, _ = lanes(pl, 2, 750*time.Millisecond, time.Second)
	if math.Abs(tree[0]-1.5) > 1e-9 || math.Abs(tree[1]-1.5) > 1e-9 {
		t.Errorf("zoomed lane %v, want [1.5 1.5]", tree)
	}
	p := lanePath([]float64{0, 1, 2}, 10, 5, 100, 40, 2)
	if p != "M10 100V100H15V80H20V60H25V100Z" {
		t.Errorf("lanePath = %q", p)
	}
	if strings.Contains(p, "NaN") {
		t.Errorf("NaN in %q", p)
	}
}
