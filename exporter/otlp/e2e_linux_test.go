package otlp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/internal/testutil/workload"
)

// buildCollectorEnv, set to 1, lets the end-to-end test build its
// Collector when none is cached: minutes of building that the README's
// test command should not cost a newcomer.
const buildCollectorEnv = "CPUTIME_BUILD_OTELCOL"

func TestMain(m *testing.M) {
	workload.Main()
	os.Exit(m.Run())
}

// collectorBinary builds testdata/otelcol (the OTLP receiver and the debug
// exporter, from the collector's core modules) once per content of its
// go.mod, go.sum and main.go, into the user's cache directory: a cold
// build takes 1-4 minutes on 2 CPUs, a cached one nothing. It skips the
// test, with the reason, where the collector cannot be built (no Go
// module proxy, no cache directory).
func collectorBinary(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join("testdata", "otelcol", f))
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
	if os.Getenv(buildCollectorEnv) != "1" {
		t.Skipf("the test OpenTelemetry Collector is not built yet (a cold build from the module proxy takes about 4 minutes on 2 CPUs): set %s=1 to build it once into %s (.ci/run does)", buildCollectorEnv, filepath.Dir(bin))
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Skipf("no cache directory for the test collector: %v", err)
	}
	t.Logf("building the test collector into %s (once per go.sum)", bin)
	cmd := exec.Command("go", "build", "-o", bin+".tmp", ".")
	cmd.Dir = filepath.Join("testdata", "otelcol")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("the test collector does not build here (%v): %s", err, lastLine(string(out)))
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
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

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logBuffer is the collector's output, safe to read while it writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startCollector runs the test collector with an OTLP receiver on HTTP and
// gRPC ports of its own and the debug exporter at detailed verbosity,
// which logs every data point with its attributes.
func startCollector(t *testing.T) (httpPort, grpcPort int, log *logBuffer) {
	bin := collectorBinary(t)
	httpPort, grpcPort = freePort(t), freePort(t)
	cfg := filepath.Join(t.TempDir(), "otelcol.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
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
`, httpPort, grpcPort)), 0o644)
	log = &logBuffer{}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
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
			t.Logf("collector output:\n%s", tail(log.String(), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range []int{httpPort, grpcPort} {
		for {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("the collector exited at start:\n%s", tail(log.String(), 2000))
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the collector is not listening on %d after 60 s:\n%s", p, tail(log.String(), 2000))
			}
		}
	}
	return httpPort, grpcPort, log
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// point is one data point of the debug exporter's log, with its metric
// and resource.
type point struct {
	metric   string
	attrs    map[string]string
	resource map[string]string
	value    float64
	at       time.Time // its Timestamp: when the pusher collected it
}

// parsePoints reads the debug exporter's detailed output: "Resource
// attributes:", "Descriptor: -> Name: ...", then for each data point
// "Data point attributes:" lines "-> key: Type(value)" and "Value: v".
// The collector writes while the test reads, so only whole lines count: a
// value cut in the middle of its line would read as a smaller number.
func parsePoints(log string) []point {
	if i := strings.LastIndexByte(log, '\n'); i >= 0 {
		log = log[:i+1]
	} else {
		log = ""
	}
	var out []point
	var res map[string]string
	var metric string
	var cur *point
	section := ""
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "Resource attributes:"):
			res, section = map[string]string{}, "resource"
		case strings.HasPrefix(l, "Data point attributes:"):
			out = append(out, point{metric: metric, attrs: map[string]string{}, resource: res})
			cur, section = &out[len(out)-1], "point"
		case strings.HasPrefix(l, "-> Name: "):
			metric = strings.TrimPrefix(l, "-> Name: ")
		case strings.HasPrefix(l, "-> ") && (section == "resource" || section == "point"):
			k, v, ok := strings.Cut(strings.TrimPrefix(l, "-> "), ": ")
			if !ok {
				continue
			}
			if i := strings.IndexByte(v, '('); i >= 0 && strings.HasSuffix(v, ")") {
				v = v[i+1 : len(v)-1]
			}
			if section == "resource" {
				res[k] = v
			} else {
				cur.attrs[k] = v
			}
		case strings.HasPrefix(l, "Value: ") && cur != nil:
			cur.value, _ = strconv.ParseFloat(strings.TrimPrefix(l, "Value: "), 64)
			section = ""
		case strings.HasPrefix(l, "StartTimestamp") || strings.HasPrefix(l, "Timestamp"):
			if ts, ok := strings.CutPrefix(l, "Timestamp: "); ok && cur != nil {
				cur.at, _ = time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", ts)
			}
			if section == "point" {
				section = "pointtimes"
			}
		}
	}
	return out
}

func schedstat(t *testing.T, pid int) float64 {
	t.Helper()
	var sum float64
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, e.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		ns, _ := strconv.ParseFloat(f[0], 64)
		sum += ns / 1e9
	}
	// The live threads' schedstat leaves out the threads that exited,
	// which the process's total holds (a race-enabled child's threads
	// can exit between the pushes). The process's stat ticks hold them,
	// rounded down to a tick: the larger of the two is still at most the
	// total.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]); len(f) > 12 {
			u, _ := strconv.ParseFloat(f[14-3], 64)
			k, _ := strconv.ParseFloat(f[15-3], 64)
			sum = max(sum, (u+k)/100) // USER_HZ: 100 on every Linux Go runs on
		}
	}
	return sum
}

// A real OpenTelemetry Collector receives the pushes, over OTLP/HTTP and
// over gRPC, and its debug exporter shows process.cpu.time of a spinning
// child with the semantic conventions' attributes, its values between the
// child's schedstat read before the pushes and after them, and host.name
// as a resource attribute.
func TestCollectorEndToEnd(t *testing.T) {
	httpPort, grpcPort, log := startCollector(t)
	child := workload.Command("spin 0")
	stdin, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); child.Process.Kill(); child.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	var spinner int
	fmt.Sscanf(line, "ready %d", &spinner)
	pid := child.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		proto string
		port  int
	}{{"http/protobuf", httpPort}, {"grpc", grpcPort}} {
		t.Run(strings.ReplaceAll(tc.proto, "/", "-"), func(t *testing.T) {
			c, err := exporter.New(exporter.Options{PIDs: []int{pid}, Threads: true, SampleInterval: -1, NoExitRecords: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := schedstat(t, pid)
			started := time.Now()
			mark := len(log.String())
			p, err := New(context.Background(), c, Options{Endpoint: "http://127.0.0.1:" + strconv.Itoa(tc.port), Protocol: tc.proto,
				Interval: 200 * time.Millisecond, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			var got []point
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				got = nil
				for _, x := range parsePoints(log.String()[mark:]) {
					// The previous subtest's last push can reach the log after
					// mark; its figures predate before.
					if x.metric == "process.cpu.time" && x.attrs["process.pid"] == strconv.Itoa(pid) && !x.at.Before(started) {
						got = append(got, x)
					}
				}
				if len(got) >= 4 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(shut); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			after := schedstat(t, pid)
			if len(got) < 4 {
				t.Fatalf("the collector shows %d process.cpu.time points of process %d after 30 s", len(got), pid)
			}
			var proc, thread map[string]float64 = map[string]float64{}, map[string]float64{}
			for _, x := range got {
				if x.resource["host.name"] != host || x.resource["service.name"] != "cputime" {
					t.Errorf("resource %v, want host.name %q and service.name cputime", x.resource, host)
				}
				if x.attrs["process.executable.name"] != filepath.Base(exe) || x.attrs["process.parent_pid"] != strconv.Itoa(os.Getpid()) {
					t.Errorf("attributes %v: want process.executable.name %q, process.parent_pid %d", x.attrs, filepath.Base(exe), os.Getpid())
				}
				if _, err := time.Parse(time.RFC3339Nano, x.attrs["process.creation.time"]); err != nil {
					t.Errorf("process.creation.time %q: %v", x.attrs["process.creation.time"], err)
				}
				mode := x.attrs["cpu.mode"]
				if mode != "user" && mode != "system" {
					t.Errorf("cpu.mode %q", mode)
				}
				if tid, ok := x.attrs["thread.id"]; ok {
					if tid == strconv.Itoa(spinner) {
						thread[mode] = x.value // the last push's
					}
				} else {
					proc[mode] = x.value
				}
			}
			if v := proc["user"] + proc["system"]; v < before-0.01 || v > after+0.01 {
				t.Errorf("process.cpu.time of process %d: %.4f s in the last push, schedstat %.4f s before the pushes and %.4f s after", pid, v, before, after)
			}
			if v := thread["user"] + thread["system"]; v <= 0 || v > after+0.01 {
				t.Errorf("process.cpu.time of the spinning thread %d: %.4f s, its process's schedstat %.4f s", spinner, v, after)
			}
		})
	}
}
