//go:build linux || windows

package goroutines

import (
	"bytes"
	"context"
	"runtime"
	"runtime/trace"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// TestTraceOnMonoClock: the engine's offset puts trace events on monoNow's
// time line, where the CPU source stamps its samples. A log event written
// between two monoNow reads must land between them once the engine has
// read the trace: with the offset of the clock snapshots (Linux), and of
// the sync events (which the Windows source writes as it samples).
func TestTraceOnMonoClock(t *testing.T) {
	modes := []bool{false, true}
	if runtime.GOOS == "windows" {
		modes = modes[1:] // there the snapshots' nanotime is coarse: the reason for sync events
	}
	for _, sync := range modes {
		t.Run(map[bool]string{false: "snapshots", true: "sync"}[sync], func(t *testing.T) { traceOnMonoClock(t, sync) })
	}
}

func traceOnMonoClock(t *testing.T, sync bool) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("another execution trace is active: %v", err)
	}
	e := newEngine()
	const marks = 5
	var before, after [marks]int64
	for i := range before {
		if sync {
			e.logSync()
		}
		spin(100000, 1) // some trace time between the sync and the mark
		before[i] = monoNow()
		trace.Log(context.Background(), "mark", "")
		after[i] = monoNow()
		spin(100000, 1)
	}
	trace.Stop()
	raw := bytes.Clone(buf.Bytes())
	if err := e.readTrace(&buf); err != nil {
		t.Fatal(err)
	}
	if e.synced != sync {
		t.Fatalf("synced by sync events: %v, want %v", e.synced, sync)
	}
	rd, err := xtrace.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	for {
		ev, err := rd.ReadEvent()
		if err != nil {
			break
		}
		if ev.Kind() == xtrace.EventLog && ev.Log().Category == "mark" {
			at = append(at, int64(ev.Time())-e.offset)
		}
	}
	if len(at) != marks {
		t.Fatalf("%d marks in the trace, want %d", len(at), marks)
	}
	// The engine's last offset maps every mark: the clocks drift apart by
	// well under 1 ms in the milliseconds this takes.
	const slack = int64(time.Millisecond)
	for i, m := range at {
		t.Logf("mark %d: %d ns after the read before it, %d ns before the read after it", i, m-before[i], after[i]-m)
		if m < before[i]-slack || m > after[i]+slack {
			t.Errorf("mark %d at %d on monoNow's clock (trace time − offset), outside [%d, %d] ± %v", i, m, before[i], after[i], time.Duration(slack))
		}
	}
}
