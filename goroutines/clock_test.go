//go:build linux || windows

package goroutines

import (
	"bytes"
	"context"
	"runtime/trace"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TestMonoIsTraceClock: monoNow is the clock of the trace's clock
// snapshots, so the engine's offset (trace time − Mono) puts trace events
// on monoNow's time line. A log event written between two monoNow reads
// must land between them, within the clocks' resolutions (Wine's nanotime
// advances by a millisecond or more at a time; the tracer's frequency on
// Windows is an estimate).
func TestMonoIsTraceClock(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("another execution trace is active: %v", err)
	}
	var before, after [3]int64
	for i := range before {
		before[i] = monoNow()
		trace.Log(context.Background(), "mark", "")
		after[i] = monoNow()
	}
	trace.Stop()
	rd, err := xtrace.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var offset int64
	synced := false
	var marks []int64
	for {
		ev, err := rd.ReadEvent()
		if err != nil {
			break
		}
		switch ev.Kind() {
		case xtrace.EventSync:
			if cs := ev.Sync().ClockSnapshot; cs != nil {
				offset, synced = int64(cs.Trace)-int64(cs.Mono), true
			}
		case xtrace.EventLog:
			if ev.Log().Category == "mark" {
				if !synced {
					t.Fatal("a log event before any clock snapshot")
				}
				marks = append(marks, int64(ev.Time())-offset)
			}
		}
	}
	if len(marks) != len(before) {
		t.Fatalf("%d marks in the trace, want %d", len(marks), len(before))
	}
	const slack = int64(20 * time.Millisecond)
	for i, m := range marks {
		t.Logf("mark %d: %d ns after the read before it, %d ns before the read after it", i, m-before[i], after[i]-m)
		if m < before[i]-slack || m > after[i]+slack {
			t.Errorf("mark %d at %d on monoNow's clock (trace time − offset), outside [%d, %d] ± %v: monoNow is not the trace's Mono clock",
				i, m, before[i], after[i], time.Duration(slack))
		}
	}
}
