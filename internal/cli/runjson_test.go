package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/recorder"
	"github.com/cputime/cputime/internal/timeline"
)

// A recorded thread whose final count did not all arrive says so in run's
// JSON, in the top process and in a child; the others do not carry the
// field.
func TestRunJSONIncompleteThreads(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	th := func(id int, incomplete bool) timeline.Thread {
		return timeline.Thread{ID: id, Name: "w", Creation: t0, Exit: t0.Add(time.Second), User: time.Millisecond, Incomplete: incomplete}
	}
	rec := &timeline.Recording{Start: t0, End: t0.Add(2 * time.Second), Processes: []timeline.Process{
		{ID: 100, Name: "top", Creation: t0, Exit: t0.Add(2 * time.Second), Threads: []timeline.Thread{th(100, false), th(101, true)}},
		{ID: 200, Parent: 100, Name: "kid", Creation: t0, Exit: t0.Add(time.Second), Threads: []timeline.Thread{th(200, true)}},
	}}
	b := recordedRunJSON(t, rec)
	var out struct {
		Threads  []map[string]any
		Children []struct{ Threads []map[string]any }
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("%v: %s", err, b.Bytes())
	}
	got := map[float64]any{}
	for _, x := range out.Threads {
		got[x["tid"].(float64)] = x["incomplete"]
	}
	for _, c := range out.Children {
		for _, x := range c.Threads {
			got[x["tid"].(float64)] = x["incomplete"]
		}
	}
	want := map[float64]any{100: false, 101: true, 200: true}
	for tid, w := range want {
		if got[tid] != w {
			t.Errorf("thread %v: incomplete %v, want %v (%s)", tid, got[tid], w, b.Bytes())
		}
	}
}

// recordedRunJSON is run's JSON record of rec, whose first process (100,
// "top") is CMD.
func recordedRunJSON(t *testing.T, rec *timeline.Recording) *bytes.Buffer {
	t.Helper()
	top := rec.Processes[0]
	r := runRecord{
		record:    record{ProcessInfo: cputime.ProcessInfo{ID: top.ID, Name: top.Name, Times: cputime.Times{Creation: top.Creation, Exit: top.Exit}}},
		recording: rec,
	}
	var b bytes.Buffer
	if err := writeRunRecord(&b, r, true, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
		t.Fatal(err)
	}
	return &b
}

// A thread id reused within a process is two threads: each keeps its own
// marks (incomplete, split_shared, estimated_ns), in the top process and
// in a child, in lists written by encoding/json and by hand.
func TestRunJSONReusedThreadIDMarks(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	threads := func(pid, n int) []timeline.Thread {
		var ts []timeline.Thread
		for i := range n {
			ts = append(ts, timeline.Thread{ID: pid + i, Name: "w", Creation: t0.Add(time.Duration(i) * time.Millisecond), Exit: t0.Add(time.Second), User: time.Millisecond})
		}
		// The last id used again by a later thread: the first lost its
		// final count, the second had its split shared and an estimate.
		a := timeline.Thread{ID: pid + 1, Name: "old", Creation: t0, Exit: t0.Add(time.Millisecond), Incomplete: true}
		b := timeline.Thread{ID: pid + 1, Name: "new", Creation: t0.Add(2 * time.Millisecond), Exit: t0.Add(time.Second), NoTicks: true, Estimated: 7 * time.Microsecond}
		return append(ts, a, b)
	}
	for _, n := range []int{3, 100} {
		rec := &timeline.Recording{Start: t0, End: t0.Add(2 * time.Second), Processes: []timeline.Process{
			{ID: 100, Name: "top", Creation: t0, Exit: t0.Add(2 * time.Second), Threads: threads(100, n)},
			{ID: 1000, Parent: 100, Name: "kid", Creation: t0, Exit: t0.Add(time.Second), Threads: threads(1000, n)},
		}}
		b := recordedRunJSON(t, rec)
		var out jsonRun
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatalf("%v: %.500s", err, b.Bytes())
		}
		if len(out.Children) != 1 {
			t.Fatalf("%d children, want 1", len(out.Children))
		}
		for _, ts := range [][]jsonThread{out.Threads, out.Children[0].Threads} {
			for _, th := range ts {
				want := jsonThread{Name: th.Name}
				switch th.Name {
				case "old":
					want.Incomplete = true
				case "new":
					want.SplitShared, want.EstimatedNs = true, 7000
				}
				if th.Incomplete != want.Incomplete || th.SplitShared != want.SplitShared || th.EstimatedNs != want.EstimatedNs {
					t.Errorf("%d threads: thread %d %q: incomplete %v, split_shared %v, estimated_ns %d; want %v, %v, %d",
						n, th.TID, th.Name, th.Incomplete, th.SplitShared, th.EstimatedNs, want.Incomplete, want.SplitShared, want.EstimatedNs)
				}
			}
		}
	}
}

// run's JSON always carries recording.complete and recording.problems: the
// recorder's problems when it ran, why there is no recording when it did
// not; the human record prints one warning line when incomplete, none
// when complete.
func TestRunRecordCompleteness(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	base := record{ProcessInfo: cputime.ProcessInfo{ID: 100, Name: "top", Times: cputime.Times{Creation: t0, Exit: t0.Add(time.Second)}}}
	rec := &timeline.Recording{Start: t0, End: t0.Add(time.Second), Processes: []timeline.Process{
		{ID: 100, Name: "top", Creation: t0, Exit: t0.Add(time.Second), Threads: []timeline.Thread{{ID: 100, Creation: t0, Exit: t0.Add(time.Second)}}},
	}}
	for _, c := range []struct {
		name     string
		r        runRecord
		complete bool
		want     string
	}{
		{"complete", runRecord{record: base, run: true, recording: rec}, true, ""},
		{"lost", runRecord{record: base, run: true, recording: rec, stats: recorder.Stats{LostRecords: 7, Problems: []string{"the kernel dropped 7 perf records"}}}, false, "dropped 7"},
		{"not recorded", runRecord{record: base, run: true, recErr: errors.New("perf_event_open: permission denied")}, false, "permission denied"},
	} {
		var b bytes.Buffer
		if err := writeRunRecord(&b, c.r, true, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
			t.Fatal(err)
		}
		var out struct {
			Recording *struct {
				Complete *bool
				Problems []string
			}
		}
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g := out.Recording
		if g == nil || g.Complete == nil || g.Problems == nil {
			t.Fatalf("%s: recording %+v in %s", c.name, g, b.Bytes())
		}
		if *g.Complete != c.complete || c.complete != (len(g.Problems) == 0) || c.want != "" && !strings.Contains(strings.Join(g.Problems, "|"), c.want) {
			t.Errorf("%s: complete %v, problems %q", c.name, *g.Complete, g.Problems)
		}
		b.Reset()
		c.r.tree = tree{valid: true}
		if err := writeRunRecord(&b, c.r, false, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
			t.Fatal(err)
		}
		warned := strings.Count(b.String(), "WARNING: the record is incomplete") + strings.Count(b.String(), "Children: not recorded")
		if want := map[bool]int{true: 0, false: 1}[c.complete]; warned != want {
			t.Errorf("%s: %d warning lines in\n%s", c.name, warned, b.String())
		}
	}
}

// A record whose final times are the last read (wait, the parent having
// reaped the process first) says so: a warning line, and final_exact
// false in JSON; an exact one says nothing and final_exact true.
func TestWaitRecordNotFinal(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, notFinal := range []bool{false, true} {
		r := runRecord{record: record{ProcessInfo: cputime.ProcessInfo{ID: 7, Name: "job",
			Times: cputime.Times{Creation: t0, Exit: t0.Add(time.Second), ExitSource: cputime.ExitObserved, User: time.Millisecond}}},
			treeNote: "10ms", notFinal: notFinal}
		var human, js bytes.Buffer
		cyc := cycler{&lazyFrequency{asked: true}}
		if err := writeRunRecord(&human, r, false, time.UTC, cyc); err != nil {
			t.Fatal(err)
		}
		if err := writeRunRecord(&js, r, true, time.UTC, cyc); err != nil {
			t.Fatal(err)
		}
		var out struct {
			FinalExact *bool `json:"final_exact"`
		}
		if err := json.Unmarshal(js.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(human.String(), "reaped it before cputime could read its final times"); warned != notFinal {
			t.Errorf("notFinal %v: %q", notFinal, human.String())
		}
		if out.FinalExact == nil || *out.FinalExact == notFinal {
			t.Errorf("notFinal %v: final_exact %v in %s", notFinal, out.FinalExact, js.Bytes())
		}
	}
}

// The human record of where a hand-made tree's CPU and memory went: the
// peak memory with its source (and "an estimate" when sampled), the
// parallelism line, and the by-command table, the top process counted with
// its own record's times; the JSON has the same figures.
func TestRunRecordTreeUse(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	proc := func(id int, name string, from, to int, cpu time.Duration) timeline.Process {
		return timeline.Process{ID: id, Parent: 100, Name: name, Creation: at(from), Exit: at(to), User: cpu,
			Threads: []timeline.Thread{{ID: id, Name: name, Creation: at(from), Exit: at(to), User: cpu}}}
	}
	rec := &timeline.Recording{Start: t0, End: at(1000), Processes: []timeline.Process{
		// The top's recorded times are 0, its own record's 40 ms: the
		// by-command table takes the record's, the lanes the threads'.
		proc(100, "make", 0, 1000, 0),
		proc(101, "cc", 0, 500, 400*time.Millisecond),
		proc(102, "cc", 100, 600, 300*time.Millisecond),
		proc(103, "ld", 600, 900, 200*time.Millisecond),
	}}
	rec.Processes[0].Parent = 0
	base := record{ProcessInfo: cputime.ProcessInfo{ID: 100, Name: "make", Times: cputime.Times{Creation: t0, Exit: at(1000), User: 30 * time.Millisecond, Kernel: 10 * time.Millisecond}}}
	r := runRecord{record: base, run: true, recording: rec, exit: &exitInfo{}, wall: time.Second,
		tree:   tree{valid: true, User: 930 * time.Millisecond, Kernel: 10 * time.Millisecond},
		memory: &recorder.Memory{PeakKiB: 409600, Source: recorder.MemoryCgroupV1}}
	var b bytes.Buffer
	if err := writeRunRecord(&b, r, false, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"Tree's peak memory, all processes at once (kbytes): 409600 (cgroup v1 memory.max_usage_in_bytes)",
		"Tasks on a CPU: 0.94 on average, 1.40 at the peak (0.010s windows, each thread's CPU spread over its life: an estimate); threads alive at once: 3 at most",
		"  PROCESSES  AT ONCE  THREADS    USER  KERNEL  COMMAND\n" +
			"          2        2        2  0.700s  0.000s  cc\n" +
			"          1        1        1  0.200s  0.000s  ld\n" +
			"          1        1        1  0.030s  0.010s  make\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the record lacks %q:\n%s", want, text)
		}
	}
	r.memory = &recorder.Memory{PeakKiB: 5000, Source: recorder.MemorySampled, Estimate: true}
	b.Reset()
	writeRunRecord(&b, r, false, time.UTC, cycler{&lazyFrequency{asked: true}})
	if want := "(kbytes): 5000 (sampled every 0.050s: an estimate)"; !strings.Contains(b.String(), want) {
		t.Errorf("the record lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := writeRunRecord(&b, r, true, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		ByCommand            []jsonCommand    `json:"by_command"`
		TreePeakMemoryKiB    *int64           `json:"tree_peak_memory_kib"`
		TreePeakMemorySource *string          `json:"tree_peak_memory_source"`
		Parallelism          *jsonParallelism `json:"parallelism"`
	}
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.ByCommand) != 3 || j.ByCommand[0] != (jsonCommand{Name: "cc", Processes: 2, Threads: 2, UserNs: 700e6, PeakConcurrent: 2}) ||
		j.ByCommand[2] != (jsonCommand{Name: "make", Processes: 1, Threads: 1, UserNs: 30e6, KernelNs: 10e6, PeakConcurrent: 1}) {
		t.Errorf("by_command %+v", j.ByCommand)
	}
	if j.TreePeakMemoryKiB == nil || *j.TreePeakMemoryKiB != 5000 || j.TreePeakMemorySource == nil || *j.TreePeakMemorySource != "sampled" {
		t.Errorf("tree peak memory %v from %v", j.TreePeakMemoryKiB, j.TreePeakMemorySource)
	}
	if p := j.Parallelism; p == nil || p.Average != 0.94 || p.Peak != 1.4 || p.PeakThreadsAlive != 3 || p.PeakFromSamples {
		t.Errorf("parallelism %+v", p)
	}
}
