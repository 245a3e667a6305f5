// Package otelcol runs a real OpenTelemetry Collector for the end-to-end
// tests of the project's OpenTelemetry code: the collector module in
// testdata (the OTLP receiver and the debug exporter), built once per
// content and cached, listening on ports of its own; and a reader of what
// its debug exporter logs, the data points as the collector received them.
//
// It uses the standard library alone, so that a test of any module may
// import it without adding to that module's requirements: it builds the
// collector with the go command, from the collector's own go.mod.
package otelcol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BuildEnv, set to 1, lets Binary build the collector when none is cached:
// minutes of building that the README's test command should not cost a
// newcomer.
const BuildEnv = "CPUTIME_BUILD_OTELCOL"

// moduleDir is the collector module's directory, beside this file's
// source: the tests run from the repository's workspace, where it is.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("no source path for package otelcol")
	}
	dir := filepath.Join(filepath.Dir(file), "testdata")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the collector's module is not beside package otelcol's source (built with -trimpath, or from a module cache, which leaves nested modules out): %w", err)
	}
	return dir, nil
}

// Binary returns the test collector, built from testdata once per content
// of its go.mod, go.sum and main.go into the user's cache directory: a
// cold build takes 1-4 minutes on 2 CPUs, a cached one nothing. It skips
// the test, with the reason, where the collector cannot be had: not built
// yet under -short or without BuildEnv=1, no Go module proxy, no cache
// directory.
func Binary(t testing.TB) string {
	t.Helper()
	dir, err := moduleDir()
	if err != nil {
		t.Skipf("no test collector: %v", err)
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no cache directory for the test collector: %v", err)
	}
	bin := filepath.Join(cache, "cputime-test", "otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if testing.Short() {
		t.Skip("-short: the test collector is not built yet (a cold build takes minutes)")
	}
	if os.Getenv(BuildEnv) != "1" {
		t.Skipf("the test OpenTelemetry Collector is not built yet (a cold build from the module proxy takes about 4 minutes on 2 CPUs): set %s=1 to build it once into %s (.ci/run does)", BuildEnv, filepath.Dir(bin))
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Skipf("no cache directory for the test collector: %v", err)
	}
	t.Logf("building the test collector into %s (once per content of %s)", bin, dir)
	// A name of this process's own: tests of two packages may build at
	// once, and the rename makes whichever finishes last the cached one.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Skipf("the test collector does not build here (%v): %s", err, lastLine(string(out)))
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// output is the collector's output, safe to read while it writes; changed
// is closed, and replaced, on each write, to wake those who wait for it.
type output struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.changed)
	o.changed = make(chan struct{})
	return o.b.Write(p)
}

func (o *output) read() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String(), o.changed
}

// A Collector is a running test collector: an OTLP receiver on HTTP and
// gRPC ports of its own, on 127.0.0.1, and the debug exporter at detailed
// verbosity, which logs every data point with its attributes.
type Collector struct {
	HTTPPort, GRPCPort int
	out                *output
}

// Start runs the test collector until the test ends, and returns once it
// listens. It skips the test where the collector cannot be had (Binary).
// When the test fails, the end of the collector's output is in its log.
func Start(t testing.TB) *Collector {
	t.Helper()
	bin := Binary(t)
	c := &Collector{HTTPPort: freePort(t), GRPCPort: freePort(t), out: &output{changed: make(chan struct{})}}
	cfg := filepath.Join(t.TempDir(), "otelcol.yaml")
	err := os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  debug:
    verbosity: detailed
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [debug]
`, c.HTTPPort, c.GRPCPort)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = c.out, c.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("collector output:\n%s", tail(c.Output(), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range []int{c.HTTPPort, c.GRPCPort} {
		for {
			conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("the collector exited at start:\n%s", tail(c.Output(), 2000))
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector is not listening on %d after 60 s:\n%s", p, tail(c.Output(), 2000))
			}
		}
	}
	return c
}

// Output is everything the collector has written so far. Its length marks
// a moment: the points of the output past it came later.
func (c *Collector) Output() string {
	s, _ := c.out.read()
	return s
}

// Await reads the points of the collector's output past offset from as
// the collector writes them, until done holds for them or timeout passes.
// It returns the points it read last, and whether done held.
func (c *Collector) Await(timeout time.Duration, from int, done func([]Point) bool) ([]Point, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s, changed := c.out.read()
		ps := ParsePoints(s[min(from, len(s)):])
		if done(ps) {
			return ps, true
		}
		select {
		case <-changed:
		case <-timer.C:
			return ps, false
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
