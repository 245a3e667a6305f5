package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/testutil/workload"
)

// shortEnv makes the test binary a short-lived process: it spins for the
// given duration of wall time and exits.
const shortEnv = "CPUTIME_E2E_SHORT"

func TestMain(m *testing.M) {
	workload.Main()
	if d, err := time.ParseDuration(os.Getenv(shortEnv)); err == nil {
		for start := time.Now(); time.Since(start) < d; {
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP polls url until it answers 200 or the process ends.
func waitHTTP(t *testing.T, u string, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("the server for %s exited before it answered", u)
		default:
		}
		if r, err := http.Get(u); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer in 60 s", u)
}

// startDaemon starts cmd, logging its output to a file shown when the test
// fails, and stops it (SIGTERM) at the end of the test.
func startDaemon(t *testing.T, name string, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s output:\n%s", name, b)
		}
	})
	return exited
}

type promResult struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant PromQL query and returns its vector.
func query(t *testing.T, prom, q string) []promResult {
	t.Helper()
	r, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promResult `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.Status != "success" {
		t.Fatalf("query %s: %v %s: %s", q, err, resp.Error, b)
	}
	return resp.Data.Result
}

func (r promResult) float(t *testing.T) float64 {
	s, _ := r.Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("value %v: %v", r.Value, err)
	}
	return v
}

// poll runs q until it returns a single sample, for up to 30 s (a few
// scrapes and rule evaluations).
func poll(t *testing.T, prom, q string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := query(t, prom, q)
		if len(res) == 1 {
			return res[0].float(t)
		}
		if len(res) > 1 {
			t.Fatalf("query %s: %d series, want 1: %v", q, len(res), res)
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %s: no series after 30 s", q)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// schedstatNanos is the run time of pid's threads, summed over their
// /proc/PID/task/TID/schedstat files.
func schedstatNanos(t *testing.T, pid int) uint64 {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no threads of %d: %v", pid, err)
	}
	var sum uint64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// procStart is the creation time of pid from /proc directly: stat's
// starttime (CLOCK_BOOTTIME ticks of 1/100 s, USER_HZ on Linux) plus the
// boot instant, CLOCK_REALTIME - CLOCK_BOOTTIME.
func procStart(t *testing.T, pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ticks, err := strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		t.Fatal(err)
	}
	var rt, bt unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME, &rt)
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &bt)
	boot := float64(rt.Nano()-bt.Nano()) / 1e9
	return boot + float64(ticks)/100
}

// TestPrometheusEndToEnd runs cputime serve (built from this module) and a
// real Prometheus scraping it every second on loopback ports, and checks
// what Prometheus stored against /proc and wait4's rusage.
func TestPrometheusEndToEnd(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary: install with apt-get install prometheus")
	}
	if testing.Short() {
		t.Skip("-short: the end-to-end test runs for about 30 s")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cputime_exporter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The spinning process: one thread spins, two idle.
	spin := workload.Command("spin 2")
	spinOut, err := spin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := spin.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); spin.Process.Kill(); spin.Wait() })
	line, err := bufio.NewReader(spinOut).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var spinTID int
	fmt.Sscanf(line, "ready %d", &spinTID)
	spinPID := spin.Process.Pid

	exporterAddr := freePort(t)
	exp := exec.Command(bin, "--web.listen-address", exporterAddr, "--threads", "--sample-interval", "100ms")
	expExited := startDaemon(t, "cputime serve", exp)
	waitHTTP(t, "http://"+exporterAddr+"/", expExited)

	promAddr := freePort(t)
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cputime
    static_configs:
      - targets: ['%s']
`, exporterAddr)), 0o644)
	prom := exec.Command(promBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	promExited := startDaemon(t, "prometheus", prom)
	promURL := "http://" + promAddr
	waitHTTP(t, promURL+"/-/ready", promExited)

	// The scrape works, in the format Prometheus negotiated.
	if up := poll(t, promURL, `up{job="cputime"} == 1`); up != 1 {
		t.Fatalf("up = %v", up)
	}

	// Start time against /proc.
	want := procStart(t, spinPID)
	got := poll(t, promURL, fmt.Sprintf(`cputime_process_start_time_seconds{pid="%d"}`, spinPID))
	if d := got - want; math.Abs(d) > 0.020 {
		t.Errorf("start time in Prometheus %.3f, /proc %.3f: off by %.1f ms, want within 20 ms", got, want, d*1e3)
	} else {
		t.Logf("start time: Prometheus %.4f, /proc %.4f (%+.1f ms)", got, want, d*1e3)
	}

	// rate() over 10 s of 1 s scrapes against 1 CPU, and against the CPU
	// the spinner really had in that time by its schedstat (the machine
	// may be shared).
	t0, ns0 := time.Now(), schedstatNanos(t, spinPID)
	for time.Since(t0) < 12*time.Second {
		time.Sleep(500 * time.Millisecond)
	}
	t1, ns1 := time.Now(), schedstatNanos(t, spinPID)
	share := float64(ns1-ns0) / float64(t1.Sub(t0).Nanoseconds())
	rate := poll(t, promURL, fmt.Sprintf(`sum(rate(cputime_process_cpu_seconds_total{pid="%d"}[10s]))`, spinPID))
	t.Logf("rate() = %.3f CPU; the spinner's share by /proc schedstat over the same 12 s: %.3f CPU", rate, share)
	// rate()'s 10 s window and the 12 s one above are not the same
	// stretch: on a loaded machine the spinner's share moves between them,
	// hence 0.03 CPU of slack beside the 10 %.
	if math.Abs(rate-share) > 0.1*share+0.03 {
		t.Errorf("rate() = %.3f CPU, the spinner had %.3f CPU by schedstat: off by more than 10 %% + 0.03", rate, share)
	}
	if share >= 0.95 && math.Abs(rate-1) > 0.1 {
		t.Errorf("rate() = %.3f CPU, want 1 ± 10 %%", rate)
	}
	if share < 0.95 {
		t.Logf("the machine is busy: the spinner had %.3f CPU, so rate() was checked against that, not against 1", share)
	}

	// The spinning thread has a series of its own.
	tq := fmt.Sprintf(`sum(cputime_thread_cpu_seconds_total{pid="%d",tid="%d"})`, spinPID, spinTID)
	if v := poll(t, promURL, tq); v <= 0 {
		t.Errorf("%s = %v, want > 0", tq, v)
	}

	// A process that lives 300 ms, between two scrapes: it is left
	// unreaped until Prometheus has its final values, then reaped, so its
	// rusage is the independent figure.
	short := exec.Command(os.Args[0], "-test.run=^$")
	short.Env = append(os.Environ(), shortEnv+"=300ms")
	if err := short.Start(); err != nil {
		t.Fatal(err)
	}
	shortPID := short.Process.Pid
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, shortPID, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	cpuQ := fmt.Sprintf(`sum(last_over_time(cputime_process_cpu_seconds_total{pid="%d"}[1m]))`, shortPID)
	exitQ := fmt.Sprintf(`last_over_time(cputime_process_exit_time_seconds{pid="%d"}[1m])`, shortPID)
	exitAt := poll(t, promURL, exitQ)
	final := poll(t, promURL, cpuQ)
	if err := short.Wait(); err != nil {
		t.Fatal(err)
	}
	ru := (short.ProcessState.UserTime() + short.ProcessState.SystemTime()).Seconds()
	t.Logf("short-lived process %d: final CPU in Prometheus %.4f s, rusage %.4f s; exit time %.3f", shortPID, final, ru, exitAt)
	if math.Abs(final-ru) > 0.002 {
		t.Errorf("short-lived process: final CPU in Prometheus %.4f s, wait4 rusage %.4f s: want within 2 ms", final, ru)
	}
	if now := float64(time.Now().UnixNano()) / 1e9; exitAt > now || exitAt < now-60 {
		t.Errorf("exit time %.3f not within the last minute (now %.3f)", exitAt, now)
	}

	// SIGTERM: a clean exit, status 0.
	exp.Process.Signal(unix.SIGTERM)
	select {
	case <-expExited:
		if code := exp.ProcessState.ExitCode(); code != 0 {
			t.Errorf("cputime serve exited with status %d on SIGTERM, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Error("cputime serve still running 10 s after SIGTERM")
	}
}
