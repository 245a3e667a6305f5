package otelgoroutines

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cputime/cputime/goroutines"
	"github.com/cputime/cputime/internal/testutil/otelcol"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// TestCollectorReceivesTaskCPU: tasks of three types burn, each type on a
// locked thread of its own, while a Watcher started by Watch runs; the
// adapter's instruments, pushed over OTLP/HTTP by the SDK's periodic
// reader, reach a real OpenTelemetry Collector, whose debug exporter
// shows, in scope ScopeName: go.task.cpu.time per go.task.type within 3 %
// (and 1 ms, and 50 µs a task) of the threads' CPU clocks inside the
// tasks, go.task.ended counting them, both monotonic cumulative sums whose
// StartTimestamp is the Watcher's start (between the call of Watch and
// Snapshot.Start, when the counting began); and the no-task, runtime and
// unattributed CPU and go.task.exact.
func TestCollectorReceivesTaskCPU(t *testing.T) {
	col := otelcol.Start(t)
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint("127.0.0.1:"+strconv.Itoa(col.HTTPPort)), otlpmetrichttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(250*time.Millisecond))),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "otelgoroutines-test"))))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := mp.Shutdown(ctx); err != nil {
			t.Errorf("MeterProvider.Shutdown: %v", err)
		}
	}()
	called := time.Now()
	w, reg, err := Watch(mp, goroutines.WithPeriod(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer reg.Unregister()
	counting := w.Snapshot().Start

	work := []struct {
		typ string
		n   int
		per time.Duration
	}{{"e2e-parse", 20, 2 * time.Millisecond}, {"e2e-render", 10, 8 * time.Millisecond}, {"e2e-store", 30, time.Millisecond}}
	truth := make([]int64, len(work))
	var wg sync.WaitGroup
	for i, x := range work {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range x.n {
				truth[i] += burnTask(x.typ, x.per)
			}
		})
	}
	wg.Wait()
	end := time.Now()
	for deadline := time.Now().Add(30 * time.Second); w.Snapshot().Through.Before(end); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Watcher did not catch up within 30 s")
		}
	}
	// A collection from now on holds the tasks' every nanosecond: the
	// points to read are those collected since.
	caught := time.Now()
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush to the collector: %v", err)
	}
	// The series to read: go.task.cpu.time's and go.task.ended's of each
	// type, go.task.unattributed.cpu.time's of each reason, and the others.
	var want [][2]string
	for _, x := range work {
		want = append(want, [2]string{"go.task.cpu.time", x.typ}, [2]string{"go.task.ended", x.typ})
	}
	for _, n := range []string{"go.task.no_task.cpu.time", "go.task.runtime.cpu.time", "go.task.overflow.types",
		"go.task.lost.trace_generations", "go.task.lost.switch_records", "go.task.exact"} {
		want = append(want, [2]string{n, ""})
	}
	for _, r := range []string{goroutines.ReasonTraceLost, goroutines.ReasonUnwatchedThread} {
		want = append(want, [2]string{"go.task.unattributed.cpu.time", r})
	}
	// latest returns the last point since caught of each series (metric,
	// and go.task.type or go.task.unattributed.reason), of this test's
	// resource.
	latest := func(ps []otelcol.Point) map[[2]string]otelcol.Point {
		m := map[[2]string]otelcol.Point{}
		for _, p := range ps {
			if p.Resource["service.name"] == "otelgoroutines-test" && !p.At.Before(caught) {
				m[[2]string{p.Metric, p.Attrs["go.task.type"] + p.Attrs["go.task.unattributed.reason"]}] = p
			}
		}
		return m
	}
	ps, ok := col.Await(30*time.Second, 0, func(ps []otelcol.Point) bool {
		m := latest(ps)
		for _, k := range want {
			if _, ok := m[k]; !ok {
				return false
			}
		}
		return true
	})
	got := latest(ps)
	if !ok {
		var missing [][2]string
		for _, k := range want {
			if _, ok := got[k]; !ok {
				missing = append(missing, k)
			}
		}
		t.Fatalf("after 30 s the collector shows no point since the Watcher caught up of %v", missing)
	}
	for k, p := range got {
		if p.Scope != ScopeName {
			t.Errorf("%s: scope %q, want %q", k[0], p.Scope, ScopeName)
		}
		if k[0] == "go.task.exact" {
			if p.DataType != "Gauge" || (p.Value != 0 && p.Value != 1) {
				t.Errorf("go.task.exact: %s of %v, want a Gauge of 0 or 1", p.DataType, p.Value)
			}
			continue
		}
		if p.DataType != "Sum" || !p.Monotonic || p.Temporality != "Cumulative" {
			t.Errorf("%s: %s, monotonic %v, temporality %q: want a monotonic cumulative Sum", k[0], p.DataType, p.Monotonic, p.Temporality)
		}
		if p.Start.Before(called) || p.Start.After(counting) {
			t.Errorf("%s: its cumulative count starts at %v; Watch was called at %v, the Watcher counts from %v",
				k[0], p.Start.Format(time.RFC3339Nano), called.Format(time.RFC3339Nano), counting.Format(time.RFC3339Nano))
		}
	}
	for i, x := range work {
		cpu, ended := got[[2]string{"go.task.cpu.time", x.typ}], got[[2]string{"go.task.ended", x.typ}]
		t.Logf("%s: go.task.cpu.time %.3f ms (%s), the thread clock %.3f ms; go.task.ended %v", x.typ, cpu.Value*1e3, cpu.Unit, float64(truth[i])/1e6, ended.Value)
		if v := cpu.Value * 1e9; v < 0.97*float64(truth[i])-1e6 || v > 1.03*float64(truth[i])+float64(x.n)*50e3+1e6 {
			t.Errorf("%s: go.task.cpu.time %.3f ms, the thread clock inside its tasks %.3f ms", x.typ, cpu.Value*1e3, float64(truth[i])/1e6)
		}
		if cpu.Unit != "s" {
			t.Errorf("go.task.cpu.time in %q, want s", cpu.Unit)
		}
		if ended.Value != float64(x.n) {
			t.Errorf("%s: go.task.ended %v, want %d", x.typ, ended.Value, x.n)
		}
	}
}
