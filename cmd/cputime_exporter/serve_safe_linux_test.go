package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/exporter/otlp"
)

// syncLog is the server's log, written by its goroutines and read by the
// test.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveLogged runs runServer with so until the test ends, its log in the
// returned syncLog, and waits until it answers on so.path (with the
// request's credentials, if any).
func serveLogged(t *testing.T, so serveOptions, user, pass string) *syncLog {
	t.Helper()
	logs := &syncLog{}
	t.Cleanup(func() { // after the server's own cleanup: its whole log
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	done := runInProcess(t, so, logs)
	waitServing(t, done, "no 200 from "+so.addrs[0], func() bool {
		req, _ := http.NewRequest("GET", "http://"+so.addrs[0]+so.path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.StatusCode == 200
	})
	return logs
}

func get(t *testing.T, client *http.Client, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	r, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// A cgroup named with invalid UTF-8, a tab, a bidi override and the
// characters the exposition format escapes (anyone with a delegated
// subtree can name one so) does not cut the scrapes of serve --cgroup or
// --cgroup.aggregate short: the health metrics, the processes in it and
// in a plain cgroup beside it are all there (their cgroups as the kernel's
// /proc/PID/cgroup gives them, made printable), scrape after scrape.
func TestServeHostileCgroupName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups (the collector's side is TestCgroupCollectorHostileNames)")
	}
	root, err := exporter.UnifiedMount()
	if err != nil {
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	name := "cputime-test\"x{\\}\xff\t\u202e hostile-" + strconv.Itoa(os.Getpid())
	printable := `cputime-test\"x{\\}??? hostile-` + strconv.Itoa(os.Getpid()) // as the exposition format quotes it
	hostile, plain := filepath.Join(root, name), filepath.Join(root, "cputime-test-plain-"+strconv.Itoa(os.Getpid()))
	pids := map[string]string{} // pid -> its cgroup as the exposition format quotes it
	for _, dir := range []string{hostile, plain} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cannot make a cgroup: %v", err)
		}
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); os.Remove(dir) })
		pid := strconv.Itoa(cmd.Process.Pid)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0o644); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
		if !strings.Contains(string(b), "0::/"+filepath.Base(dir)+"\n") {
			t.Fatalf("process %s not in %q after the move: %q", pid, dir, b)
		}
		pids[pid] = "/" + filepath.Base(dir)
		if dir == hostile {
			pids[pid] = "/" + printable
		}
	}
	for _, aggregate := range []bool{false, true} {
		so := serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 16,
			opts: exporter.Options{Cgroups: !aggregate, SampleInterval: -1, NoExitRecords: true}, cgroups: aggregate}
		serveLogged(t, so, "", "")
		for i := range 3 {
			code, body := get(t, http.DefaultClient, "http://"+so.addrs[0]+"/metrics", "", "")
			if code != 200 {
				t.Fatalf("aggregate %v, scrape %d: %d", aggregate, i, code)
			}
			for _, m := range []string{"cputime_scrape_duration_seconds ", `cputime_collect_errors_total{reason="metric"} 0`} {
				if !strings.Contains(body, m) {
					t.Errorf("aggregate %v, scrape %d: no %q", aggregate, i, m)
				}
			}
			for pid, cg := range pids {
				want := `cputime_cgroup_cpu_seconds_total{cgroup="` + cg + `",`
				if !aggregate {
					want = `cputime_process_cgroup_info{cgroup="` + cg + `",container_id="",pid="` + pid + `"`
				}
				if !strings.Contains(body, want) {
					t.Errorf("aggregate %v, scrape %d: no %s", aggregate, i, want)
				}
			}
		}
	}
}

// 40 clients scraping as fast as they can, and a scraper every 100 ms
// beside them: every scrape of every client gets 200 and metrics (none is
// refused), and the scrapes that came together share collections: the
// responses carry fewer distinct cputime_scrape_duration_seconds values
// (one per collection) than there were responses.
func TestServeConcurrentScrapesShareCollection(t *testing.T) {
	so := serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 64,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}}
	serveLogged(t, so, "", "")
	url := "http://" + so.addrs[0] + "/metrics"
	duration := regexp.MustCompile(`(?m)^cputime_scrape_duration_seconds (\S+)$`)
	var mu sync.Mutex
	codes := map[int]int{}
	failures := map[string]int{}
	collections := map[string]bool{}
	responses := 0
	record := func(code int, body string) {
		mu.Lock()
		defer mu.Unlock()
		codes[code]++
		if code == 0 {
			failures[body]++
		}
		if m := duration.FindStringSubmatch(body); code == 200 && m != nil {
			collections[m[1]] = true
			responses++
		}
	}
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			// A connection of its own, kept, as a scraper keeps one: with
			// the default transport's two idle connections for all 40,
			// they would open one a request, and the server's bound on
			// connections would close idle ones under them.
			client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for n := 0; n < 1000 && time.Now().Before(stop); n++ {
				record(get(t, client, url, "", ""))
			}
		})
	}
	scrapes, good := 0, 0
	scraper := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer scraper.CloseIdleConnections()
	for time.Now().Before(stop) {
		code, body := get(t, scraper, url, "", "")
		scrapes++
		if code == 200 && strings.Contains(body, "cputime_process_cpu_seconds_total{") {
			good++
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if good != scrapes {
		t.Errorf("beside 40 clients scraping flat out, %d of %d scrapes got metrics", good, scrapes)
	}
	for code, n := range codes {
		if code != 200 {
			t.Errorf("%d client scrapes answered %d", n, code)
		}
	}
	for err, n := range failures {
		t.Errorf("%d client scrapes failed: %s", n, err)
	}
	if len(collections) >= responses {
		t.Errorf("%d responses from %d collections: concurrent scrapes did not share one", responses, len(collections))
	}
	t.Logf("%d responses to the 40 clients from %d collections", responses, len(collections))
}

// Wrong passwords: each is answered 401 and counted until the client's
// bucket of failures is empty, then 429 without a bcrypt comparison, and
// counted so; the log says so in a line or two, not one per attempt; the
// scraper with the right password gets its metrics all along. The counts
// are checked against the statuses the client saw.
func TestServeFailedLoginsCounted(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("basic_auth_users:\n  scraper: '%s'\n", hash)), 0o600)
	so := serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 16, config: cfg,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}}
	logs := serveLogged(t, so, "scraper", "s3cret")
	url := "http://" + so.addrs[0] + "/metrics"
	client := &http.Client{Timeout: 20 * time.Second}
	seen := map[int]int{}
	start := time.Now()
	for i := range 40 {
		code, _ := get(t, client, url, "scraper", "guess"+strconv.Itoa(i))
		seen[code]++
		if i%10 == 0 {
			if code, body := get(t, client, url, "scraper", "s3cret"); code != 200 || !strings.Contains(body, "cputime_process_cpu_seconds_total{") {
				t.Errorf("the right password after %d guesses: %d", i+1, code)
			}
		}
	}
	took := time.Since(start)
	if seen[401]+seen[429] != 40 || seen[429] == 0 || seen[401] < loginBurst || seen[401] > loginBurst+int(took/loginEvery)+1 {
		t.Errorf("40 wrong passwords in %v answered %v, want %d 401 and one more per %v, then 429", took, seen, loginBurst, loginEvery)
	}
	_, body := get(t, client, url, "scraper", "s3cret")
	for reason, want := range map[string]int{"invalid": seen[401], "limited": seen[429]} {
		m := regexp.MustCompile(`(?m)^cputime_web_login_failures_total\{reason="` + reason + `"\} (\d+)$`).FindStringSubmatch(body)
		if m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("cputime_web_login_failures_total{reason=%q}: %v, want %d (the statuses seen)", reason, m, want)
		}
	}
	lines := strings.Count(logs.String(), `msg="failed login"`)
	if lines == 0 || lines > 1+int(took/logEvery) {
		t.Errorf("%d log lines for 40 failed logins in %v, want one, then one per %v", lines, took, logEvery)
	}
	// A user that does not exist fails as a wrong password does.
	other := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	if code, _ := get(t, other, "http://"+so.addrs[0]+"/metrics", "nobody", "x"); code != 401 {
		t.Errorf("an unknown user from another address: %d, want 401", code)
	}
}

// SIGHUP, which Prometheus and its exporters take as "reload the
// configuration", leaves serve serving (it ended it, exit 129) and says
// in the log what it did.
func TestServeSIGHUPKeepsServing(t *testing.T) {
	so := serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 16,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}}
	logs := serveLogged(t, so, "", "")
	if err := unix.Kill(os.Getpid(), unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "SIGHUP") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "SIGHUP") {
		t.Error("nothing logged for SIGHUP in 10 s")
	}
	if code, body := get(t, http.DefaultClient, "http://"+so.addrs[0]+"/metrics", "", ""); code != 200 || !strings.Contains(body, "cputime_process_cpu_seconds_total{") {
		t.Errorf("after SIGHUP: %d", code)
	}
}

// With OTLP on and no collector listening, the start-up line names the
// endpoint and protocol, and the failed pushes are logged as they happen
// through the server's log (every line slog's text format: the SDK's
// default handler writes in the log package's own).
func TestServeOTLPErrorsLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, proto := range []string{"grpc", "http/protobuf"} {
		so := serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 16,
			opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true},
			otlp: otlp.Options{Endpoint: closed, Protocol: proto, Interval: 200 * time.Millisecond}}
		logs := serveLogged(t, so, "", "")
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), "OTLP push failed") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		out := logs.String()
		if !strings.Contains(out, `msg="OTLP push failed"`) {
			t.Errorf("%s: no failed push logged in 5 s with pushes every 200 ms", proto)
		}
		if !regexp.MustCompile(`msg="pushing OTLP metrics" endpoint=` + regexp.QuoteMeta(closed) + `\S* protocol=` + regexp.QuoteMeta(proto)).MatchString(out) {
			t.Errorf("%s: no start-up line naming the endpoint and protocol", proto)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "time=") {
				t.Errorf("%s: a log line not in slog's format: %q", proto, sc.Text())
			}
		}
	}
}
