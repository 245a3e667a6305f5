package otelgoroutines

import (
	"context"
	"runtime"
	"runtime/trace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cputime/cputime/goroutines"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"golang.org/x/sys/unix"
)

func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

// sink keeps the burn loops from being optimized away; tasks burn on
// several threads at once.
var sink atomic.Uint64

// burnTask runs a task of type typ that burns d of its thread's CPU clock
// and returns the CPU the clock counted inside the task, in ns. The caller
// locks its goroutine to the thread.
func burnTask(typ string, d time.Duration) int64 {
	_, task := trace.NewTask(context.Background(), typ)
	defer task.End()
	c0 := threadCPU()
	for x := uint64(1); threadCPU()-c0 < int64(d); {
		for j := 0; j < 10000; j++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		sink.Add(x)
	}
	return threadCPU() - c0
}

// TestCollectedAgainstThreadClock: tasks burn on a locked thread; the
// collected go.task.cpu.time of their type is within 3 % (and 1 ms) of the
// thread's CPU clock inside them, and go.task.ended counts them. The
// points of Register's instruments start when it was called, after the
// Watcher's start, as the package's doc says (the SDK stamps the start
// time when it makes an instrument).
func TestCollectedAgainstThreadClock(t *testing.T) {
	w, err := goroutines.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	registered := time.Now()
	reg, err := Register(w, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()

	runtime.LockOSThread()
	var truth int64
	for i := 0; i < 20; i++ {
		truth += burnTask("otel-work", 3*time.Millisecond)
	}
	runtime.UnlockOSThread()
	end := time.Now()
	for deadline := time.Now().Add(30 * time.Second); w.Snapshot().Through.Before(end); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Watcher did not catch up within 30 s")
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var cpu float64
	var ended int64
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			switch d := m.Data.(type) {
			case metricdata.Sum[float64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic %v, temporality %v", m.Name, d.IsMonotonic, d.Temporality)
				}
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value(attribute.Key("go.task.type")); m.Name == "go.task.cpu.time" && v.AsString() == "otel-work" {
						cpu = p.Value
					}
					if p.StartTime.Before(registered) {
						t.Errorf("%s: start time %v, before Register was called at %v", m.Name, p.StartTime, registered)
					}
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value(attribute.Key("go.task.type")); m.Name == "go.task.ended" && v.AsString() == "otel-work" {
						ended = p.Value
					}
				}
			}
		}
	}
	t.Logf("go.task.cpu.time{otel-work} %.2f ms, the thread clock %.2f ms; ended %d; instruments %v", cpu*1e3, float64(truth)/1e6, ended, seen)
	if cpu*1e9 < 0.97*float64(truth)-1e6 || cpu*1e9 > 1.03*float64(truth)+20*50e3+1e6 {
		t.Errorf("go.task.cpu.time %.2f ms, the thread clock %.2f ms", cpu*1e3, float64(truth)/1e6)
	}
	if ended != 20 {
		t.Errorf("go.task.ended %d, want 20", ended)
	}
	for _, n := range []string{"go.task.no_task.cpu.time", "go.task.runtime.cpu.time", "go.task.unattributed.cpu.time", "go.task.exact", "go.task.lost.trace_generations"} {
		if !seen[n] {
			t.Errorf("no %s collected", n)
		}
	}
}
