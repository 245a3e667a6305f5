package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cputime/cputime"
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
	r := runRecord{
		record:    record{ProcessInfo: cputime.ProcessInfo{ID: 100, Name: "top", Times: cputime.Times{Creation: t0, Exit: t0.Add(2 * time.Second)}}},
		recording: rec,
	}
	var b bytes.Buffer
	if err := writeRunRecord(&b, r, true, time.UTC, cycler{&lazyFrequency{asked: true}}); err != nil {
		t.Fatal(err)
	}
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
	want := map[float64]any{100: nil, 101: true, 200: true}
	for tid, w := range want {
		if got[tid] != w {
			t.Errorf("thread %v: incomplete %v, want %v (%s)", tid, got[tid], w, b.Bytes())
		}
	}
}
