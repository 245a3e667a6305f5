package promgoroutines

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime/trace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/goroutines"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func spin(n int) (x uint64) {
	x = 88172645463325252
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

var sink uint64

// burnTasks runs n tasks of type typ, each spinning for about per of wall
// time on this goroutine.
func burnTasks(typ string, n int, per time.Duration) {
	for i := 0; i < n; i++ {
		_, task := trace.NewTask(context.Background(), typ)
		for t0 := time.Now(); time.Since(t0) < per; {
			sink += spin(1000)
		}
		task.End()
	}
}

// waitEnded polls until the Watcher has counted n ends of typ (within 30 s).
func waitEnded(t *testing.T, w *goroutines.Watcher, typ string, n uint64) goroutines.Snapshot {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := w.Snapshot()
		for _, x := range append(s.Types, s.Overflow) {
			if x.Type == typ && x.Ended >= n {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the Watcher has not counted %d ends of %q: %+v", n, typ, s.Types)
		}
	}
}

// TestCollectorLints: the families pass client_golang's linter (names,
// units, help), are counters where cumulative, and carry the task type.
func TestCollectorLints(t *testing.T) {
	w, err := goroutines.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	burnTasks("GET /x", 5, 2*time.Millisecond)
	waitEnded(t, w, "GET /x", 5)
	c := NewCollector(w)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP go_task_ended_total Runtime/trace tasks of the type that ended (requests, with goroutines.Middleware).
# TYPE go_task_ended_total counter
go_task_ended_total{task_type="GET /x"} 5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "go_task_ended_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "go_task_cpu_seconds_total"); n != 1 {
		t.Errorf("%d go_task_cpu_seconds_total series, want 1 (GET /x)", n)
	}
}

// TestScrapeOverHTTP: a real scrape of /metrics over loopback shows each
// route's CPU, and the CPU families add up to no more than the process's
// CPU (process_cpu_seconds_total from client_golang's process collector,
// an independent source: /proc/self/stat).
func TestScrapeOverHTTP(t *testing.T) {
	w, err := goroutines.Watch(goroutines.WithMaxTypes(2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(w), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	app := http.NewServeMux()
	for _, p := range []string{"/a", "/b", "/c"} {
		app.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) { sink += spin(200000) })
	}
	mux.Handle("/", goroutines.Middleware(app))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	for i := 0; i < 30; i++ {
		for _, p := range []string{"/a", "/b", "/c", "/nothing"} {
			resp, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	waitEnded(t, w, goroutines.OverflowType, 60)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	val := func(series string) float64 {
		m := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no %s in the scrape", series)
			return 0
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	// The first two types seen are counted apart; the rest overflow.
	var cpu float64
	for _, s := range regexp.MustCompile(`(?m)^go_task_cpu_seconds_total\{task_type="([^"]*)"\} (\S+)$`).FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(s[2], 64)
		cpu += v
		if v <= 0 {
			t.Errorf("task_type %q: %v s", s[1], v)
		}
	}
	if val(`go_task_ended_total{task_type="(overflow)"}`) != 60 || val("go_task_overflow_types_total") != 2 {
		t.Errorf("overflow: %v tasks of %v types, want 60 of 2 (the limit is 2 types of 4)", val(`go_task_ended_total{task_type="(overflow)"}`), val("go_task_overflow_types_total"))
	}
	cpu += val("go_task_no_task_cpu_seconds_total") + val("go_task_runtime_cpu_seconds_total")
	proc := val("process_cpu_seconds_total")
	t.Logf("CPU families %.3f s, process %.3f s", cpu, proc)
	if cpu > proc+0.02 { // the process collector counts in 10 ms ticks
		t.Errorf("CPU families add up to %.3f s, more than the process's %.3f s", cpu, proc)
	}
	if !strings.Contains(text, "# TYPE go_task_cpu_seconds_total counter") || val("go_task_exact") != 1 && val("go_task_exact") != 0 {
		t.Errorf("go_task_cpu_seconds_total is not a counter, or go_task_exact is missing")
	}
}
