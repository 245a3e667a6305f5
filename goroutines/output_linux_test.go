package goroutines

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"
)

func recordShort(t *testing.T) *Profile {
	rec, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	runWorkload(30*time.Millisecond, 5*time.Millisecond, false)
	p, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// go tool pprof, not this package, reads the profile back.
func TestPprofOpensInGoToolPprof(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run go tool pprof")
	}
	p := recordShort(t)
	file := filepath.Join(t.TempDir(), "goroutines.pb.gz")
	var buf bytes.Buffer
	if err := p.WritePprof(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "tool", "pprof", "-raw", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -raw: %v\n%s", err, out)
	}
	raw := string(out)
	for _, want := range []string{"cpu/nanoseconds", "runWorkload.func", "task:[unit-4]", "function:[", runtimeFrame} {
		if !strings.Contains(raw, want) {
			t.Errorf("go tool pprof -raw does not show %q:\n%s", want, raw)
		}
	}
	// The samples add up to the goroutines and the runtime.
	out, err = exec.Command(gobin, "tool", "pprof", "-top", "-unit=ns", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	var sum time.Duration
	for _, g := range p.Goroutines {
		sum += g.CPU
	}
	total := (sum + p.Runtime).Nanoseconds()
	if !strings.Contains(string(out), "total "+itoa(total)+"ns") && !strings.Contains(string(out), "of "+itoa(total)+"ns total") {
		t.Errorf("go tool pprof -top does not report %d ns in total:\n%s", total, out)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + "?seconds=0.2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	if _, err := io.ReadAll(zr); err != nil {
		t.Fatalf("bad gzip: %v", err)
	}

	for _, bad := range []string{"?seconds=x", "?seconds=-1", "?seconds=0", "?seconds=1e9", "?seconds=NaN"} {
		resp, err := http.Get(srv.URL + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", bad, resp.StatusCode)
		}
	}

	// A second recording while one runs: 409 Conflict, the first unharmed.
	done := make(chan int)
	go func() {
		resp, err := http.Get(srv.URL + "?seconds=0.5&debug=1")
		if err != nil {
			done <- 0
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "goroutine") {
			t.Errorf("debug=1 body: %s", b)
		}
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !traceRunning() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	resp, err = http.Get(srv.URL + "?seconds=0.1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("a second recording: status %d (%s), want 409", resp.StatusCode, body)
	}
	if code := <-done; code != 200 {
		t.Errorf("the first recording: status %d", code)
	}
}

func TestWriteText(t *testing.T) {
	p := recordShort(t)
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exact", "unit-2", "runWorkload.func"} {
		if !p.Exact && want == "exact" {
			continue
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

func traceRunning() bool { return trace.IsEnabled() }
