package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/exporter"
)

// The server: OpenMetrics or Prometheus text as asked, the landing page,
// 404 elsewhere, and a clean return when its context ends (what SIGTERM
// does in serve).
func TestServeHTTP(t *testing.T) {
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServer(ctx, serveOptions{addrs: []string{addr}, path: "/metrics", maxConns: 64,
			opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1}}, io.Discard)
	}()
	waitHTTP(t, "http://"+addr+"/", nil)
	get := func(path, accept string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r, string(b)
	}
	r, body := get("/metrics", "application/openmetrics-text;version=1.0.0")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics asked: Content-Type %q, body ending %q", ct, body[max(0, len(body)-20):])
	}
	if !strings.Contains(body, "cputime_process_cpu_seconds_total{") {
		t.Errorf("no process CPU series for our own process:\n%s", body)
	}
	r, body = get("/metrics", "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || strings.Contains(body, "# EOF") {
		t.Errorf("no Accept: Content-Type %q", ct)
	}
	if r, body = get("/", ""); r.StatusCode != 200 || !strings.Contains(body, `/metrics"`) {
		t.Errorf("landing page: %d %q", r.StatusCode, body)
	}
	if r, _ = get("/nothing", ""); r.StatusCode != 404 {
		t.Errorf("/nothing: %d, want 404", r.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runServer after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runServer still running 10 s after its context ended")
	}
}
