package recorder

import (
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/timeline"
)

// Each cause of an inexact recording has its sentence, with its count;
// nothing to say means complete.
func TestProblems(t *testing.T) {
	if p := problems(Stats{Source: "taskstats", CPUs: 2}, 10); len(p) != 0 {
		t.Fatalf("nothing wrong: %q", p)
	}
	for _, c := range []struct {
		st   Stats
		want []string
	}{
		{Stats{LostRecords: 1204}, []string{"dropped 1204 perf records"}},
		{Stats{Corrupt: 1}, []string{"1 stretch"}},
		{Stats{ExitsDropped: 3}, nil}, // other processes' records
		{Stats{Incomplete: 37}, []string{"37 exited threads have no exact final time"}},
		{Stats{Running: 1}, []string{"1 thread was still running when process 10 exited"}},
		{Stats{ExitUnseen: 5}, []string{"exit of 5 tasks was not seen"}},
		{Stats{ExitOnly: 4}, []string{"4 tasks of the tree were seen only"}},
		{Stats{UnknownCreation: 2}, []string{"creation of 2 tasks was not seen"}},
		{Stats{Source: "perf", Steal: 30 * time.Millisecond, SourceNote: "no CAP_NET_ADMIN"}, []string{"took 30ms", "no CAP_NET_ADMIN"}},
		{Stats{Source: "taskstats", Steal: 30 * time.Millisecond}, nil}, // perf's clock not used
		{Stats{Source: "perf", SwitchFast: true}, []string{"before Linux 6.12", "another perf user"}},
		{Stats{Source: "taskstats", SwitchFast: true}, nil}, // perf gives only the last stretch, within a tick
		{Stats{ClockStep: -2 * time.Second}, []string{"stepped by -2s"}},
		{Stats{ClockStep: 200 * time.Microsecond}, nil}, // slewing, not a step
	} {
		p := problems(c.st, 10)
		if len(c.want) == 0 {
			if len(p) != 0 {
				t.Errorf("%+v: %q, want none", c.st, p)
			}
			continue
		}
		if len(p) != 1 {
			t.Errorf("%+v: %q, want one sentence", c.st, p)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(p[0], w) {
				t.Errorf("%+v: %q lacks %q", c.st, p[0], w)
			}
		}
	}
	// Dropped exit records that cost a thread of the tree its final time:
	// both said.
	if p := problems(Stats{ExitsDropped: 3, Incomplete: 2}, 10); len(p) != 2 ||
		!strings.Contains(p[0], "dropped 3 exit records") || !strings.Contains(p[1], "2 exited threads have no exact final time") {
		t.Errorf("dropped and incomplete: %q", p)
	}
	if !(Stats{}).Complete() || (Stats{Problems: []string{"x"}}).Complete() {
		t.Error("Complete disagrees with Problems")
	}
}

// ShareSplit gives the threads without tick evidence the tree's kernel
// time that the others' ticks leave over, by their totals; no total
// changes, and each process is its threads' sum.
func TestShareSplit(t *testing.T) {
	ms := time.Millisecond
	rec := &timeline.Recording{Processes: []timeline.Process{
		{ID: 1, Threads: []timeline.Thread{{ID: 1, User: 80 * ms, Kernel: 20 * ms}, {ID: 2, User: 30 * ms, NoTicks: true}}},
		{ID: 3, Parent: 1, Threads: []timeline.Thread{{ID: 3, User: 10 * ms, NoTicks: true}}},
	}}
	// wait4: 140 ms in all, 40 ms kernel: 20 ms accounted for by thread
	// 1's ticks, 20 ms left for the 40 ms of threads 2 and 3.
	ShareSplit(rec, 100*ms, 40*ms)
	p, q := rec.Processes[0], rec.Processes[1]
	if th := p.Threads[1]; th.Kernel != 15*ms || th.User != 15*ms {
		t.Errorf("thread 2: user %v kernel %v, want 15ms 15ms", th.User, th.Kernel)
	}
	if th := q.Threads[0]; th.Kernel != 5*ms || th.User != 5*ms {
		t.Errorf("thread 3: user %v kernel %v, want 5ms 5ms", th.User, th.Kernel)
	}
	if p.Kernel != 35*ms || p.User != 95*ms || q.Kernel != 5*ms {
		t.Errorf("processes: %v/%v and %v/%v", p.User, p.Kernel, q.User, q.Kernel)
	}
	if th := p.Threads[0]; th.Kernel != 20*ms || th.User != 80*ms {
		t.Errorf("a thread with ticks changed: %v/%v", th.User, th.Kernel)
	}
	// The others' ticks already account for more kernel time than wait4
	// gives: nothing is left, and nothing goes negative.
	ShareSplit(rec, 130*ms, 10*ms)
	if th := rec.Processes[0].Threads[1]; th.Kernel != 0 || th.User != 30*ms {
		t.Errorf("nothing left: thread 2 %v/%v", th.User, th.Kernel)
	}
}

// FitTree shares what the exact parts leave of the tree's total: over
// the caps' sum, to one level, none beyond its cap; under it, each its cap
// and the rest in equal shares to each process's last thread (not the
// top's); the top process untouched, and nothing with a task running.
func TestFitTree(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1e9, 0)
	mk := func() *timeline.Recording {
		return &timeline.Recording{Processes: []timeline.Process{
			{ID: 1, Threads: []timeline.Thread{{ID: 1, User: 10 * ms, Exit: t0.Add(3)}}},
			{ID: 2, Parent: 1, Threads: []timeline.Thread{
				{ID: 2, User: 1 * ms, EstimateCap: 1 * ms, Exit: t0.Add(1)},
				{ID: 3, User: 3 * ms, Kernel: 1 * ms, EstimateCap: 4 * ms, Exit: t0.Add(2)}}},
			{ID: 4, Parent: 1, Threads: []timeline.Thread{{ID: 4, User: 500 * time.Microsecond, EstimateCap: 500 * time.Microsecond, Exit: t0.Add(1)}}},
		}}
	}
	// Exact parts: 10 + 1 + 4 + 0.5 = 15.5 ms; caps 5.5 ms; 2.5 ms left:
	// 0.5 and 1 whole, 1 for the 4-ms cap.
	rec, st := mk(), Stats{Source: "taskstats"}
	if !FitTree(rec, &st, 1, 18*ms) || !st.TreeFitted {
		t.Fatal("not fitted")
	}
	th := rec.Processes[1].Threads
	if th[0].Estimated != 1*ms || th[1].Estimated != 1*ms || rec.Processes[2].Threads[0].Estimated != 500*time.Microsecond {
		t.Errorf("estimates %v %v %v", th[0].Estimated, th[1].Estimated, rec.Processes[2].Threads[0].Estimated)
	}
	if got := th[1].User + th[1].Kernel; got != 5*ms || th[1].Kernel != ms*5/4 {
		t.Errorf("thread 3: %v (kernel %v), want 5ms, its 1:3 split kept", got, th[1].Kernel)
	}
	var sum time.Duration
	for _, p := range rec.Processes {
		sum += p.User + p.Kernel
	}
	if sum != 18*ms {
		t.Errorf("the tree adds up to %v, want 18ms", sum)
	}
	// Over the caps: 23 ms, 2 ms beyond them, 1 ms each to processes 2
	// (on thread 3, its last) and 4.
	rec, st = mk(), Stats{Source: "taskstats"}
	FitTree(rec, &st, 1, 23*ms)
	if e := rec.Processes[1].Threads[1].Estimated; e != 5*ms {
		t.Errorf("thread 3: estimated %v, want 5ms", e)
	}
	if e := rec.Processes[2].Threads[0].Estimated; e != 1500*time.Microsecond {
		t.Errorf("thread 4: estimated %v, want 1.5ms", e)
	}
	if rec.Processes[0].Threads[0].User != 10*ms {
		t.Errorf("the top process's thread changed")
	}
	rec, st = mk(), Stats{Source: "taskstats", Running: 1}
	if FitTree(rec, &st, 1, 18*ms) {
		t.Error("fitted with a task still running")
	}
}

// hasProblem says whether one of st's problems says word.
func hasProblem(st Stats, word string) bool {
	for _, p := range st.Problems {
		if strings.Contains(p, word) {
			return true
		}
	}
	return false
}

// CheckTree names a recording whose tasks add up to 1 ms or more above
// wait4's total for the tree, from either source, or 1 ms or more below
// it from perf's clock, and nothing else.
func TestCheckTree(t *testing.T) {
	rec := func(ms ...float64) *timeline.Recording {
		r := &timeline.Recording{}
		for i, m := range ms {
			d := time.Duration(m * float64(time.Millisecond))
			r.Processes = append(r.Processes, timeline.Process{ID: 100 + i, User: d - d/4, Kernel: d / 4})
		}
		return r
	}
	for _, c := range []struct {
		name  string
		rec   *timeline.Recording
		st    Stats
		total time.Duration
		want  time.Duration
	}{
		{"over by 4.5 ms", rec(4.9, 30), Stats{Source: "perf", SourceNote: "no CAP_NET_ADMIN"}, 30400 * time.Microsecond, 4500 * time.Microsecond},
		{"over by 1 ms", rec(31.4), Stats{Source: "perf"}, 30400 * time.Microsecond, time.Millisecond},
		{"over by less than 1 ms", rec(31.3), Stats{Source: "perf"}, 30400 * time.Microsecond, 0},
		{"under by less than 1 ms", rec(10, 20), Stats{Source: "perf"}, 30400 * time.Microsecond, 0},
		{"under by 5 ms", rec(10, 15.4), Stats{Source: "perf", SourceNote: "no CAP_NET_ADMIN"}, 30400 * time.Microsecond, 0},
		{"taskstats, under by 5 ms", rec(10, 15.4), Stats{Source: "taskstats"}, 30400 * time.Microsecond, 0},
		{"taskstats, fitted", rec(10, 20), Stats{Source: "taskstats"}, 30 * time.Millisecond, 0},
		{"taskstats, over", rec(10, 30), Stats{Source: "taskstats"}, 30 * time.Millisecond, 10 * time.Millisecond},
		{"tasks still running", rec(40), Stats{Source: "perf", Running: 1}, 30 * time.Millisecond, 0},
		{"no total", rec(40), Stats{Source: "perf"}, 0, 0},
		{"not a recording of this package's", rec(40), Stats{}, 30 * time.Millisecond, 0},
	} {
		st := c.st
		got := CheckTree(c.rec, &st, c.total)
		if got != c.want || st.Excess != c.want {
			t.Errorf("%s: excess %v (Stats %v), want %v", c.name, got, st.Excess, c.want)
		}
		// Short of wait4's total: named with perf's clock, which stops
		// early and can run slow; with taskstats FitTree has already
		// fitted what can be fitted, and what cannot is Incomplete's.
		short := c.name == "under by 5 ms"
		if named := hasProblem(st, "less than the kernel's total"); named != short || (st.Shortfall == 5*time.Millisecond) != short {
			t.Errorf("%s: shortfall %v, problems %q", c.name, st.Shortfall, st.Problems)
		}
		if short && (!hasProblem(st, "5ms less") || !hasProblem(st, "no CAP_NET_ADMIN")) {
			t.Errorf("%s: problems %q do not say 5ms and why the times come from perf", c.name, st.Problems)
		}
		if named := hasProblem(st, "more than the kernel's total"); named != (c.want > 0) {
			t.Errorf("%s: problems %q", c.name, st.Problems)
		}
		if c.want > 0 && !hasProblem(st, c.want.String()) {
			t.Errorf("%s: problems %q do not say %v", c.name, st.Problems, c.want)
		}
		if c.name == "over by 4.5 ms" && !hasProblem(st, "no CAP_NET_ADMIN") {
			t.Errorf("%s: problems %q do not say why the times come from perf", c.name, st.Problems)
		}
	}
	if CheckTree(nil, &Stats{Source: "perf"}, time.Second) != 0 || CheckTree(rec(5), nil, time.Millisecond) != 0 {
		t.Error("nil recording or stats: want 0")
	}
}
