package goroutines_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime/trace"
	"sort"
	"time"

	"github.com/cputime/cputime/goroutines"
)

// handle serves one request inside a task named for its type: everything
// the request's goroutine does until task.End counts for that type.
func handle(ctx context.Context, kind string, work func()) {
	ctx, task := trace.NewTask(ctx, kind)
	defer task.End()
	trace.WithRegion(ctx, "handler", work)
}

// Which request type used the CPU: record a while, then add up the tasks by
// type.
func Example() {
	rec, err := goroutines.Start()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		handle(ctx, "GET /search", func() { burn(3 * time.Millisecond) })
		handle(ctx, "GET /health", func() { burn(100 * time.Microsecond) })
	}
	prof, err := rec.Stop()
	if err != nil {
		log.Fatal(err)
	}
	byType := map[string]time.Duration{}
	for _, t := range prof.Tasks {
		byType[t.Type] += t.CPU
	}
	types := make([]string, 0, len(byType))
	for typ := range byType {
		types = append(types, typ)
	}
	sort.Slice(types, func(i, j int) bool { return byType[types[i]] > byType[types[j]] })
	for _, typ := range types {
		fmt.Printf("%-12s %v\n", typ, byType[typ])
	}
	if !prof.Complete {
		fmt.Println("warning:", prof.Problems)
	}
}

// The profile opens in go tool pprof; its labels name the task type.
func ExampleProfile_WritePprof() {
	rec, err := goroutines.Start()
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Second) // the program works meanwhile
	prof, err := rec.Stop()
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create("goroutines.pb.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := prof.WritePprof(f); err != nil {
		log.Fatal(err)
	}
	// go tool pprof -tags goroutines.pb.gz
}

// Serve recordings beside net/http/pprof:
// go tool pprof 'http://localhost:6060/debug/cputime/goroutines?seconds=10'
func ExampleHandler() {
	http.Handle("/debug/cputime/goroutines", goroutines.Handler())
	log.Fatal(http.ListenAndServe("localhost:6060", nil))
}

func burn(d time.Duration) {
	for t0 := time.Now(); time.Since(t0) < d; {
	}
}

// CPU per route for the program's whole life: a Watcher, each request in a
// task typed by its route, and the counters read (promgoroutines exports
// them to Prometheus, otelgoroutines to OpenTelemetry).
func ExampleWatch() {
	w, err := goroutines.Watch()
	if err != nil {
		log.Fatal(err) // errors.Is(err, goroutines.ErrNotSupported) off Linux
	}
	defer w.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(rw http.ResponseWriter, r *http.Request) {
		if used, ok := goroutines.TaskCPU(r.Context()); ok && used > time.Second {
			http.Error(rw, "over this request's CPU budget", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, r.PathValue("id"))
	})
	go http.ListenAndServe("localhost:8080", goroutines.Middleware(mux))

	time.Sleep(10 * time.Second)
	s := w.Snapshot()
	for _, t := range s.Types {
		fmt.Printf("%-16s %v over %d requests\n", t.Type, t.CPU, t.Ended)
	}
	fmt.Printf("no task %v, runtime %v, exact %v\n", s.NoTask, s.Runtime, s.Exact)
}
