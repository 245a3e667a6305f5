package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

type parsedTrace struct {
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData"`
	TraceEvents     []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		TS   *float64       `json:"ts"`
		Dur  *float64       `json:"dur"`
		PID  *int           `json:"pid"`
		TID  *int           `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

func writeTrace(t *testing.T, r *Recording) (parsedTrace, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTrace(&buf, r); err != nil {
		t.Fatalf("WriteTrace: %v", err)
	}
	var tr parsedTrace
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("trace does not parse as the JSON Object Format: %v\n%s", err, buf.String())
	}
	return tr, buf.String()
}

// usSince is the test's own conversion, from the model, to the trace's µs.
func usSince(origin, t time.Time) float64 { return float64(t.Sub(origin).Nanoseconds()) / 1e3 }

func TestTraceOneSlicePerThread(t *testing.T) {
	r := sampleRecording()
	tr, raw := writeTrace(t, r)
	if tr.DisplayTimeUnit != "ms" && tr.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit = %q", tr.DisplayTimeUnit)
	}
	if got, want := tr.OtherData["origin"], r.Start.Format(time.RFC3339Nano); got != want {
		t.Errorf("otherData.origin = %q, want %q", got, want)
	}
	type key struct{ pid, tid int }
	slices := map[key]int{}
	names := map[key]string{}
	procNames := map[int]string{}
	for i, ev := range tr.TraceEvents {
		if ev.Ph == "" || ev.PID == nil || ev.TS == nil && ev.Ph != "M" {
			t.Fatalf("event %d lacks ph, pid or ts: %+v", i, ev)
		}
		switch {
		case ev.Ph == "X" && ev.Cat == TraceCategoryThread:
			slices[key{*ev.PID, *ev.TID}]++
		case ev.Ph == "M" && ev.Name == "thread_name":
			names[key{*ev.PID, *ev.TID}] = ev.Args["name"].(string)
		case ev.Ph == "M" && ev.Name == "process_name":
			procNames[*ev.PID] = ev.Args["name"].(string)
		}
	}
	threads := 0
	for _, p := range r.Processes {
		if procNames[p.ID] == "" {
			t.Errorf("no process_name for pid %d", p.ID)
		}
		for _, th := range p.Threads {
			threads++
			k := key{p.ID, th.ID}
			if slices[k] != 1 {
				t.Errorf("thread %d/%d has %d X slices, want 1", p.ID, th.ID, slices[k])
			}
			want := th.Name
			switch want {
			case "":
				want = "thread 301"
			case hostileBidi:
				want = "worker?evil?[31m?x"
			}
			if names[k] != want {
				t.Errorf("thread_name of %d/%d = %q, want %q", p.ID, th.ID, names[k], want)
			}
		}
	}
	total := 0
	for _, n := range slices {
		total += n
	}
	if total != threads {
		t.Errorf("%d thread slices for %d threads", total, threads)
	}

	// ts and dur against the model, ns-exact (µs with 3 decimals).
	for _, ev := range tr.TraceEvents {
		if ev.Ph != "X" || ev.Cat != TraceCategoryThread {
			continue
		}
		th := findThread(r, *ev.PID, *ev.TID)
		if th == nil {
			t.Fatalf("slice for unknown thread %d/%d", *ev.PID, *ev.TID)
		}
		end, running := th.Exit, false
		if end.IsZero() {
			end, running = r.End, true
		}
		if want := usSince(r.Start, th.Creation); math.Abs(*ev.TS-want) > 5e-4 {
			t.Errorf("thread %d: ts %v, want %v", th.ID, *ev.TS, want)
		}
		if ev.Dur == nil {
			t.Errorf("thread %d: no dur", th.ID)
			continue
		}
		if want := usSince(th.Creation, end); math.Abs(*ev.Dur-want) > 5e-4 {
			t.Errorf("thread %d: dur %v, want %v", th.ID, *ev.Dur, want)
		}
		if got := ev.Args["user_ns"].(float64); got != float64(th.User.Nanoseconds()) {
			t.Errorf("thread %d: user_ns %v, want %v", th.ID, got, th.User.Nanoseconds())
		}
		if got := ev.Args["kernel_ns"].(float64); got != float64(th.Kernel.Nanoseconds()) {
			t.Errorf("thread %d: kernel_ns %v, want %v", th.ID, got, th.Kernel.Nanoseconds())
		}
		if got, _ := ev.Args["running_at_end"].(bool); got != running {
			t.Errorf("thread %d: running_at_end %v, want %v", th.ID, got, running)
		}
	}
	// Markup in names is JSON's business: escaped in the file, exact once
	// decoded.
	if strings.Contains(raw, "<script") || strings.Contains(raw, "\u202e") || strings.Contains(raw, "\x1b") {
		t.Errorf("raw trace holds a hostile name unescaped")
	}
}

func findThread(r *Recording, pid, tid int) *Thread {
	for i := range r.Processes {
		if r.Processes[i].ID != pid {
			continue
		}
		for j := range r.Processes[i].Threads {
			if r.Processes[i].Threads[j].ID == tid {
				return &r.Processes[i].Threads[j]
			}
		}
	}
	return nil
}

func TestTraceCounters(t *testing.T) {
	r := sampleRecording()
	tr, _ := writeTrace(t, r)
	type step struct{ ts, pct float64 }
	got := map[int][]step{}
	for _, ev := range tr.TraceEvents {
		if ev.Ph != "C" || ev.Name == "running tasks" {
			continue
		}
		got[*ev.TID] = append(got[*ev.TID], step{*ev.TS, ev.Args["percent"].(float64)})
	}
	// Worked by hand from sampleRecording: thread 101 lives 100–300 ms with
	// 60 ms CPU by 200 ms and 150 ms at exit; thread 202 from 400 ms, 10 ms
	// by 500 ms, 60 ms by 600 ms, still running.
	want := map[int][]step{
		101: {{100e3, 60}, {200e3, 90}, {300e3, 0}},
		202: {{400e3, 10}, {500e3, 50}},
	}
	if len(got) != len(want) {
		t.Errorf("counters for threads %v, want only for those with samples (101, 202)", got)
	}
	for tid, w := range want {
		g := got[tid]
		if len(g) != len(w) {
			t.Errorf("thread %d: counter steps %v, want %v", tid, g, w)
			continue
		}
		for i := range w {
			if math.Abs(g[i].ts-w[i].ts) > 1e-3 || math.Abs(g[i].pct-w[i].pct) > 1e-9 {
				t.Errorf("thread %d step %d: %v, want %v", tid, i, g[i], w[i])
			}
		}
	}
}

// TestTraceCountersLaggingSample: a sample that lags the exact final total
// (as schedstat-based samples can in a real go build, a step of several
// CPUs in a thread's last instants) is merged away; no step exceeds one CPU
// and the steps still add up to the thread's CPU time.
func TestTraceCountersLaggingSample(t *testing.T) {
	r := &Recording{Start: at(0), End: at(100), Processes: []Process{{ID: 1, Name: "p", Creation: at(0), Exit: at(100),
		Threads: []Thread{{ID: 1, Name: "p", Creation: at(0), Exit: at(100), User: ms(50),
			Samples: []Sample{{At: at(40), CPU: ms(10)}, {At: at(99.9), CPU: ms(20)}}}}}}}
	tr, _ := writeTrace(t, r)
	var ts, pct []float64
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "C" && ev.Name != "running tasks" {
			ts = append(ts, *ev.TS)
			pct = append(pct, ev.Args["percent"].(float64))
		}
	}
	if len(ts) == 0 || pct[len(pct)-1] != 0 {
		t.Fatalf("steps %v at %v: want them to end with 0 at the exit", pct, ts)
	}
	integral := 0.0 // µs of CPU
	for i := 0; i+1 < len(ts); i++ {
		if pct[i] > 100 {
			t.Errorf("step at %v µs is %v%% of one CPU", ts[i], pct[i])
		}
		integral += pct[i] / 100 * (ts[i+1] - ts[i])
	}
	if math.Abs(integral-50e3) > 1 {
		t.Errorf("steps add up to %v µs of CPU, want 50000", integral)
	}
	// By hand: 0–40 ms at 25 %, then 40 ms of CPU over 60 ms.
	want := []float64{25, 200.0 / 3, 0}
	if len(pct) != len(want) || math.Abs(pct[0]-want[0]) > 1e-9 || math.Abs(pct[1]-want[1]) > 1e-9 {
		t.Errorf("steps %v, want %v", pct, want)
	}
}

func TestTraceEmptyAndEdgeRecordings(t *testing.T) {
	tr, raw := writeTrace(t, &Recording{})
	if len(tr.TraceEvents) != 0 || !strings.Contains(raw, `"traceEvents":[`) {
		t.Errorf("empty recording: %d events, raw %q", len(tr.TraceEvents), raw)
	}

	// Start and End unset: the trace spans what the recording holds.
	r := &Recording{Processes: []Process{{ID: 7, Name: "x", Creation: at(5), Threads: []Thread{
		{ID: 7, Name: "x", Creation: at(5), Exit: at(9)},
		{ID: 8, Name: "y", Creation: at(6)},
	}}}}
	tr, _ = writeTrace(t, r)
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "X" && *ev.TID == 8 {
			if *ev.TS != 1000 || *ev.Dur != 3000 || ev.Args["running_at_end"] != true {
				t.Errorf("running thread without End: ts %v dur %v args %v, want 1000, 3000, running", *ev.TS, *ev.Dur, ev.Args)
			}
		}
	}

	// A creation before Start (tick-granular) moves the origin, not an error.
	r = sampleRecording()
	r.Processes[0].Threads[0].Creation = at(-10)
	tr, _ = writeTrace(t, r)
	if got, want := tr.OtherData["origin"], at(-10).Format(time.RFC3339Nano); got != want {
		t.Errorf("origin %q, want %q", got, want)
	}
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "X" && *ev.TID == 101 && *ev.TS != 110e3 {
			t.Errorf("thread 101 ts %v after the origin moved 10 ms earlier, want 110000", *ev.TS)
		}
	}

	// Creations the recorder missed: a thread drawn from its process's
	// creation, a process from its first thread's, both flagged.
	r = sampleRecording()
	r.Processes[1].Threads[1].Creation = time.Time{} // 201, of cc1 created at 200 ms
	r.Processes[2].Creation = time.Time{}            // ld, whose first thread came at 750 ms
	tr, _ = writeTrace(t, r)
	found := 0
	for _, ev := range tr.TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		switch {
		case ev.Cat == TraceCategoryThread && *ev.TID == 201:
			found++
			if *ev.TS != 200e3 || *ev.Dur != 110e3 || ev.Args["creation_unknown"] != true || ev.Args["creation"] != "" {
				t.Errorf("thread without creation: ts %v dur %v args %v; want 200000, 110000, creation_unknown", *ev.TS, *ev.Dur, ev.Args)
			}
		case ev.Cat == TraceCategoryProcess && *ev.PID == 300:
			found++
			if *ev.TS != 750e3 || ev.Args["creation_unknown"] != true {
				t.Errorf("process without creation: ts %v args %v; want 750000, creation_unknown", *ev.TS, ev.Args)
			}
		case ev.Args["creation_unknown"] != nil:
			t.Errorf("%s %q flagged creation_unknown", ev.Cat, ev.Name)
		}
	}
	if found != 2 {
		t.Errorf("found %d of the 2 slices without creation", found)
	}

	// Two samples at one instant are not an interval: no step for it.
	r = sampleRecording()
	s := &r.Processes[1].Threads[2].Samples
	*s = append(*s, Sample{At: at(600), CPU: ms(60)})
	tr, _ = writeTrace(t, r)
	steps := 0
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "C" && *ev.TID == 202 {
			steps++
		}
	}
	if steps != 2 {
		t.Errorf("%d counter steps with a repeated sample, want 2", steps)
	}

	// A reused pid and tid: two tracks, real IDs in args.
	r = &Recording{Start: at(0), End: at(100), Processes: []Process{
		{ID: 5, Name: "a", Creation: at(0), Exit: at(10), Threads: []Thread{{ID: 5, Name: "a", Creation: at(0), Exit: at(10)}}},
		{ID: 5, Name: "b", Creation: at(20), Exit: at(30), Threads: []Thread{{ID: 5, Name: "b", Creation: at(20), Exit: at(30)}}},
	}}
	tr, _ = writeTrace(t, r)
	seen := map[[2]int]bool{}
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "X" && ev.Cat == TraceCategoryThread {
			k := [2]int{*ev.PID, *ev.TID}
			if seen[k] {
				t.Errorf("two threads on track %v", k)
			}
			seen[k] = true
			if ev.Args["pid"] != 5.0 || ev.Args["tid"] != 5.0 {
				t.Errorf("args keep the real ids: %v", ev.Args)
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d thread tracks, want 2", len(seen))
	}
}

func TestInvalidRecordings(t *testing.T) {
	cases := map[string]func(r *Recording){
		"thread exit before creation":  func(r *Recording) { r.Processes[1].Threads[0].Exit = at(100) },
		"process exit before creation": func(r *Recording) { r.Processes[2].Exit = at(1) },
		"end before start":             func(r *Recording) { r.End = at(-1) },
		"no creation anywhere": func(r *Recording) {
			r.Start = time.Time{}
			r.Processes[2].Creation = time.Time{}
			for i := range r.Processes[2].Threads {
				r.Processes[2].Threads[i].Creation = time.Time{}
			}
		},
		"negative user": func(r *Recording) { r.Processes[0].User = -1 },
		"samples out of order": func(r *Recording) {
			s := r.Processes[1].Threads[2].Samples
			s[0], s[1] = s[1], s[0]
		},
		"CPU decreasing": func(r *Recording) { r.Processes[1].Threads[2].Samples[1].CPU = ms(1) },
	}
	writers := map[string]func(*bytes.Buffer, *Recording) error{
		"trace": func(b *bytes.Buffer, r *Recording) error { return WriteTrace(b, r) },
		"html":  func(b *bytes.Buffer, r *Recording) error { return WriteHTML(b, r) },
		"svg":   func(b *bytes.Buffer, r *Recording) error { return WriteSVG(b, r) },
	}
	for wname, write := range writers {
		var buf bytes.Buffer
		err := write(&buf, nil)
		if !errors.Is(err, ErrInvalidRecording) || buf.Len() != 0 {
			t.Errorf("%s(nil) = %v, wrote %d bytes; want ErrInvalidRecording and nothing", wname, err, buf.Len())
		}
		for name, spoil := range cases {
			r := sampleRecording()
			spoil(r)
			buf.Reset()
			err := write(&buf, r)
			if !errors.Is(err, ErrInvalidRecording) {
				t.Errorf("%s, %s: err = %v, want ErrInvalidRecording", wname, name, err)
			}
			if buf.Len() != 0 {
				t.Errorf("%s, %s: wrote %d bytes with an error", wname, name, buf.Len())
			}
		}
	}
	r := sampleRecording()
	r.Processes[1].Threads[0].Exit = at(100)
	if err := WriteTrace(&bytes.Buffer{}, r); err == nil || !strings.Contains(err.Error(), "thread 200 of process 200") {
		t.Errorf("error %v does not name the thread", err)
	}
}

// The whole tree's "running tasks" counter, on the hand-made recording of
// TestParallelismHandMade: its steps hold the tree's CPU (1.5 CPU-s over
// the second), peak at 2 (the first quarter), and end at 0 at the end.
func TestTraceRunningTasks(t *testing.T) {
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
	tr, _ := writeTrace(t, r)
	var ts, v []float64
	group := -1
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "M" && ev.Name == "process_name" && ev.Args["name"] == "whole tree" {
			group = *ev.PID
		}
		if ev.Ph == "C" && ev.Name == "running tasks" {
			if *ev.PID != group {
				t.Errorf("running tasks in process %d, not the whole tree's (%d)", *ev.PID, group)
			}
			ts, v = append(ts, *ev.TS), append(v, ev.Args["tasks"].(float64))
		}
	}
	want := []float64{2, 1, 1.5, 0}
	wantTS := []float64{0, 250e3, 500e3, 1000e3}
	if len(v) != len(want) {
		t.Fatalf("running tasks %v at %v µs, want %v at %v", v, ts, want, wantTS)
	}
	for i := range want {
		if math.Abs(v[i]-want[i]) > 1e-9 || math.Abs(ts[i]-wantTS[i]) > 1e-3 {
			t.Errorf("step %d: %v at %v µs, want %v at %v", i, v[i], ts[i], want[i], wantTS[i])
		}
	}
}
