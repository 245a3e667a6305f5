package goroutines

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/trace"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

var benchIters int

// eight is the CPU-bound program of the overhead figure: 8 goroutines, each
// spinning about 2 ms of CPU, then waiting for the others.
func eight() {
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(8)
	for i := 0; i < 8; i++ {
		go func() {
			defer wg.Done()
			x := spin(benchIters, uint64(i+1))
			mu.Lock()
			sink.Add(x)
			mu.Unlock()
		}()
	}
	wg.Wait()
}

// BenchmarkOverhead: the same program with no recording and inside one
// recording. ns/op is wall time; cpu-ns/op the process's CPU time per
// operation, Start and Stop included: on a shared machine, whose other
// load changes the wall time from run to run, the CPU time is the steadier
// figure of what a recording costs. Run them interleaved, several times
// (docs/goroutines.md has the figures and the machine):
//
//	go test -c -o /tmp/g.test && for i in 1 2 3 4 5 6; do /tmp/g.test -test.run '^$' -test.bench Overhead -test.benchmem; done
func BenchmarkOverhead(b *testing.B) {
	if benchIters == 0 {
		benchIters = itersFor(2 * time.Millisecond)
	}
	b.Run("off", func(b *testing.B) {
		c0 := processCPU()
		for b.Loop() {
			eight()
		}
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("recording", func(b *testing.B) {
		c0 := processCPU()
		rec, err := Start()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			eight()
		}
		b.StopTimer()
		p, err := rec.Stop()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		if !p.Exact {
			b.Logf("fallback: %q", p.Problems)
		}
	})
}

// BenchmarkHTTPWatch: a real net/http server on loopback (httptest), each
// request spinning about 0.5 ms of CPU, served bare and through Middleware
// with a Watcher running. cpu-ns/req is the process's CPU time per request,
// the client's (in this process, the same in both) included; the ratio of
// the two is what watching costs a server (DESIGN §9: at most a few
// percent). Interleave them, several times:
//
//	go test -c -o /tmp/g.test ./goroutines && for i in 1 2 3 4 5 6; do /tmp/g.test -test.run '^$' -test.bench HTTPWatch; done
func BenchmarkHTTPWatch(b *testing.B) {
	iters := itersFor(500 * time.Microsecond)
	app := http.NewServeMux()
	app.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, spin(iters, 7)&1)
	})
	run := func(b *testing.B, h http.Handler) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		c := srv.Client()
		get := func() {
			resp, err := c.Get(srv.URL + "/work")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get() // a connection to reuse
		c0 := processCPU()
		for b.Loop() {
			get()
		}
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/req")
	}
	b.Run("bare", func(b *testing.B) { run(b, app) })
	b.Run("watched", func(b *testing.B) {
		w, err := Watch()
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		run(b, Middleware(app))
		if s := w.Snapshot(); !s.Exact {
			b.Logf("fallback: %s", s.Fallback)
		}
	})
}

// BenchmarkParseHTTPTrace: what the Watcher's parser and engine cost per
// scheduling event. It records the execution trace of 500 requests to a
// real net/http server behind Middleware (httptest, loopback), then each
// operation parses that trace into a watching engine, as a Watcher does
// with each generation. ns/event is the figure docs/goroutines.md states;
// events/req says how many events a request makes.
//
//	go test -run '^$' -bench ParseHTTPTrace -benchmem ./goroutines
func BenchmarkParseHTTPTrace(b *testing.B) {
	app := http.NewServeMux()
	app.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, spin(1000, 7)&1)
	})
	srv := httptest.NewServer(Middleware(app))
	defer srv.Close()
	c := srv.Client()
	const requests = 500
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		b.Skipf("the execution tracer is taken: %v", err)
	}
	for i := 0; i < requests; i++ {
		resp, err := c.Get(srv.URL + "/work")
		if err != nil {
			trace.Stop()
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	trace.Stop()
	rd, err := xtrace.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		b.Fatal(err)
	}
	events := 0
	for {
		if _, err := rd.ReadEvent(); err != nil {
			break
		}
		events++
	}
	for b.Loop() {
		e := newEngine()
		e.w = newWatchState(DefaultMaxTypes)
		e.pairs = nil
		if err := e.readTrace(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	b.ReportMetric(float64(events)/requests, "events/req")
}
