package goroutines

import (
	"context"
	"math"
	"runtime"
	"runtime/trace"
	"sync"
	"testing"
	"time"
)

// A request's task made on one goroutine; a helper goroutine works for it
// inside a region with the task's context, and also works outside it. The
// task gets the region's CPU (the helper's thread CPU clock inside it),
// not the rest; a child task's CPU counts in its parent too.
func TestRegionOnAnotherGoroutine(t *testing.T) {
	iters := itersFor(time.Millisecond)
	var inRegion, child int64
	rec, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, task := trace.NewTask(context.Background(), "request")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		burnFor := func(d time.Duration) int64 {
			c0 := ownThreadCPU()
			x := uint64(1)
			for ownThreadCPU()-c0 < int64(d) {
				x = spin(iters/10, x)
			}
			sink.Add(x)
			return ownThreadCPU() - c0
		}
		burnFor(40 * time.Millisecond) // not the request's
		trace.WithRegion(ctx, "helper", func() {
			inRegion = burnFor(60 * time.Millisecond)
		})
		_, sub := trace.NewTask(ctx, "request.step")
		child = burnFor(30 * time.Millisecond)
		sub.End()
		burnFor(40 * time.Millisecond) // not the request's either
	}()
	wg.Wait()
	task.End()
	p, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	got := tasksByType(p)
	if len(got["request"]) != 1 || len(got["request.step"]) != 1 {
		t.Fatalf("tasks %+v", p.Tasks)
	}
	req, step := got["request"][0], got["request.step"][0]
	if step.Parent != req.ID {
		t.Errorf("request.step's parent %d, want %d", step.Parent, req.ID)
	}
	t.Logf("request %v (region %.1f ms + child %.1f ms by the helper's clock), step %v", req.CPU, ms(inRegion), ms(child), step.CPU)
	tol := 0.1
	if !p.Exact {
		tol = 0.25 // shares of 2 ms samples
	}
	near := func(got time.Duration, want int64) bool {
		return math.Abs(float64(int64(got)-want)) <= tol*float64(want)+2e6
	}
	if !near(step.CPU, child) {
		t.Errorf("request.step: %v, the helper's clock %v", step.CPU, time.Duration(child))
	}
	if !near(req.CPU, inRegion+child) {
		t.Errorf("request: %v, the region and the child task by the helper's clock %v", req.CPU, time.Duration(inRegion+child))
	}
}
