package recorder

import (
	"strings"
	"testing"
	"time"
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
		{Stats{ExitsDropped: 3}, []string{"dropped 3 exit records"}},
		{Stats{Incomplete: 37}, []string{"37 exited threads have no exact final time"}},
		{Stats{Running: 1}, []string{"1 thread was still running when process 10 exited"}},
		{Stats{ExitUnseen: 5}, []string{"exit of 5 tasks was not seen"}},
		{Stats{ExitOnly: 4}, []string{"4 tasks of the tree were seen only"}},
		{Stats{UnknownCreation: 2}, []string{"creation of 2 tasks was not seen"}},
		{Stats{Source: "perf", Steal: 30 * time.Millisecond, SourceNote: "no CAP_NET_ADMIN"}, []string{"took 30ms", "no CAP_NET_ADMIN"}},
		{Stats{Source: "taskstats", Steal: 30 * time.Millisecond, Tick: 4 * time.Millisecond}, []string{"took 30ms", "at most 4ms"}},
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
	if !(Stats{}).Complete() || (Stats{Problems: []string{"x"}}).Complete() {
		t.Error("Complete disagrees with Problems")
	}
}
