package exporter

import (
	"bufio"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/taskstats"
	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/sampler"
)

func TestMain(m *testing.M) {
	workload.Main()
	os.Exit(m.Run())
}

type child struct {
	cmd      *exec.Cmd
	pid, tid int
}

// startWorkload starts the test binary as the workload ("spin N", "idle N").
func startWorkload(tb testing.TB, mode string) child {
	cmd := workload.Command(mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatal(err)
	}
	c := child{cmd: cmd, pid: cmd.Process.Pid}
	fmt.Sscanf(line, "ready %d", &c.tid)
	return c
}

// runtimeNanos sums pid's threads' run time from their schedstat files.
func runtimeNanos(t *testing.T, pid int) float64 {
	paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum uint64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that exited meanwhile
		}
		v, _ := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
		sum += v
	}
	// The live threads leave out those that exited, which the process's
	// total holds; its stat ticks hold them, rounded down to a tick.
	secs := float64(sum) / 1e9
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]); len(f) > 12 {
			u, _ := strconv.ParseFloat(f[14-3], 64)
			k, _ := strconv.ParseFloat(f[15-3], 64)
			secs = max(secs, (u+k)/100) // USER_HZ
		}
	}
	return secs
}

// leads reports whether thread tid of process pid has run longer than each
// of its other threads (/proc schedstat).
func leads(pid, tid int) bool {
	paths, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var mine, most uint64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that exited meanwhile
		}
		v, _ := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
		if filepath.Base(filepath.Dir(p)) == strconv.Itoa(tid) {
			mine = v
		} else {
			most = max(most, v)
		}
	}
	return mine > most
}

func gather(t *testing.T, c prometheus.Collector) map[string][]*dto.Metric {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		m[mf.GetName()] = mf.Metric
	}
	return m
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// The live collector on a spinning child: its CPU counters lie between
// /proc schedstat readings taken before and after the scrape, and its
// spinning thread is the one exported under a cap of one thread.
func TestLiveSpinningChild(t *testing.T) {
	c := startWorkload(t, "spin 3")
	col, err := New(Options{PIDs: []int{c.pid}, Threads: true, MaxThreads: 1, SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	// The first scrape exports the thread with the most CPU in all: wait
	// until the spinner is it (a race-enabled child's main thread can use
	// more CPU to start than the spinner has after a fixed wait).
	for deadline := time.Now().Add(10 * time.Second); !leads(c.pid, c.tid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("thread %d has not used more CPU than the others of %d in 10 s", c.tid, c.pid)
		}
	}
	before := runtimeNanos(t, c.pid)
	m := gather(t, col)
	after := runtimeNanos(t, c.pid)
	var total float64
	for _, x := range m["cputime_process_cpu_seconds_total"] {
		if label(x, "pid") != strconv.Itoa(c.pid) {
			t.Errorf("a series of another process: %v", x)
		}
		total += x.Counter.GetValue()
	}
	// The process CPU clock may lag a running thread by a tick (4 ms at
	// HZ=250): 10 ms of slack.
	if total < before-0.010 || total > after+0.010 {
		t.Errorf("process CPU %.6f s, schedstat %.6f s before and %.6f s after", total, before, after)
	}
	th := m["cputime_thread_cpu_seconds_total"]
	if len(th) != 2 || label(th[0], "tid") != strconv.Itoa(c.tid) {
		t.Errorf("with a cap of one thread, want the spinner %d's two series, got %v", c.tid, th)
	}
	if got := m["cputime_thread_series_dropped_total"][0].Counter.GetValue(); got < 3 {
		t.Errorf("dropped %v thread series, want at least 3 (the idle threads and main)", got)
	}
	if n := m["cputime_process_threads"][0].Gauge.GetValue(); n < 5 {
		t.Errorf("threads = %v, want at least 5", n)
	}
}

// --name selects by comm: the test binary's, not the others.
func TestLiveNameFilter(t *testing.T) {
	c := startWorkload(t, "idle 1")
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.pid))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSpace(string(comm))
	col, err := New(Options{Name: regexp.MustCompile("^" + regexp.QuoteMeta(name) + "$"), SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	found := false
	for _, x := range gather(t, col)["cputime_process_threads"] {
		if label(x, "name") != name {
			t.Errorf("a process named %q passed the filter for %q", label(x, "name"), name)
		}
		found = found || label(x, "pid") == strconv.Itoa(c.pid)
	}
	if !found {
		t.Errorf("process %d (%s) not exported", c.pid, name)
	}
	if _, ok := gather(t, col)["cputime_unseen_tasks_total"]; ok {
		t.Error("cputime_unseen_tasks_total exported with a name filter: the fork count is system-wide")
	}
}

func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScrape is one scrape of /metrics (refresh, metrics, Prometheus
// text encoding) of a 10,000-thread process with Options.Threads, with
// the default cap and without one; it reports this process's CPU time per
// scrape (getrusage), which is to stay under 100 ms. One of the
// threads is always running (and entering the scheduler, so its run time
// is always current): the sampler then reads every thread at each scrape,
// as it must for a real process, where a wholly idle one would be answered
// from its process clock alone.
//
//	go test -run '^$' -bench Scrape -benchmem ./exporter/
func BenchmarkScrape(b *testing.B) {
	c := startWorkload(b, "yield 10000")
	// The floor: the sampler's refresh of the same threads, without the
	// exporter's process refresh, series and encoding.
	b.Run("threads=10000/sampler-refresh", func(b *testing.B) {
		s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var x sampler.Sample
		s.RefreshInto(&x)
		cpu0 := cpuTime()
		for b.Loop() {
			if err := s.RefreshInto(&x); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/scrape")
	})
	for _, max := range []int{DefaultMaxThreads, -1} {
		b.Run(fmt.Sprintf("threads=10000/max=%d", max), func(b *testing.B) {
			col, err := New(Options{PIDs: []int{c.pid}, Threads: true, MaxThreads: max, SampleInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer col.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(col)
			h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			scrape := func() int {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
				n, _ := io.Copy(io.Discard, w.Body)
				return int(n)
			}
			scrape()
			cpu0 := cpuTime()
			var size int
			for b.Loop() {
				size = scrape()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/scrape")
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// Background refreshes and concurrent scrapes (run with -race), then Close.
func TestLiveBackgroundConcurrent(t *testing.T) {
	c := startWorkload(t, "idle 2")
	col, err := New(Options{PIDs: []int{c.pid}, Threads: true, SampleInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 10 {
				if _, err = reg.Gather(); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if err := col.Close(); err != nil {
		t.Error(err)
	}
	if err := col.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := reg.Gather(); err == nil {
		t.Error("a scrape after Close did not fail")
	}
}

// Processes that come and go between two scrapes, with no refresh between
// them, are counted as unseen: at least the ones we started (the rest of
// the machine only adds), but for the processes that started while the
// collector took its baseline or the first scrape read the fork count
// before its refresh: those may be seen appear without being counted as
// created (the count errs low, never high). /proc says which they are:
// those alive whose start time is not before the window's.
func TestLiveUnseen(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) on PATH")
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	from := uint64(ts.Nano() / 1e7) // USER_HZ ticks, as /proc/PID/stat's start time
	col, err := New(Options{SampleInterval: -1, NoExitRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	unseen := func() float64 { return gather(t, col)["cputime_unseen_tasks_total"][0].Counter.GetValue() }
	before := unseen()
	window := 0.0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if i := strings.LastIndexByte(string(b), ')'); err == nil && i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
				if start, _ := strconv.ParseUint(f[19], 10, 64); start >= from {
					window++
				}
			}
		}
	}
	for range 5 {
		if err := exec.Command(truePath).Run(); err != nil {
			t.Fatal(err)
		}
	}
	if after := unseen(); after-before < 5-window {
		t.Errorf("cputime_unseen_tasks_total grew by %v after 5 processes came and went between scrapes (%v started while the baseline was taken), want at least %v", after-before, window, 5-window)
	}
}

// With the kernel's exit records (root), processes that come and go
// between two scrapes, with nothing refreshed between them, are exported
// with their final CPU time, which wait4's rusage confirms, under a start
// label of their own.
func TestLiveExitRecords(t *testing.T) {
	if err := taskstats.Check(); err != nil {
		t.Skipf("no exit records here: %v", err)
	}
	col, err := New(Options{SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	if col.exits == nil {
		t.Fatal("taskstats.Check passed but the collector has no exit records")
	}
	gather(t, col)
	truth := map[int]float64{}
	for range 3 {
		cmd := workload.Command("burn 0 120")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		r.ReadString('\n') // ready
		in.Write([]byte("\n"))
		r.ReadString('\n') // burnt
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		truth[cmd.Process.Pid] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	m := gather(t, col)
	got := map[int]float64{}
	starts := map[int]string{}
	for _, x := range m["cputime_process_cpu_seconds_total"] {
		pid, _ := strconv.Atoi(label(x, "pid"))
		if _, ok := truth[pid]; ok {
			got[pid] += x.Counter.GetValue()
			starts[pid] = label(x, "start")
		}
	}
	exits := map[int]bool{}
	for _, x := range m["cputime_process_exit_time_seconds"] {
		pid, _ := strconv.Atoi(label(x, "pid"))
		exits[pid] = true
	}
	for pid, want := range truth {
		if v, ok := got[pid]; !ok {
			t.Errorf("process %d (%.3f s by wait4) has no series", pid, want)
		} else if v < 0.95*want || v > 1.05*want+0.005 {
			t.Errorf("process %d: %.4f s exported, wait4 says %.4f s", pid, v, want)
		}
		if !exits[pid] {
			t.Errorf("process %d: no exit time", pid)
		}
		if starts[pid] == "" {
			t.Errorf("process %d: no start label", pid)
		}
	}
}

// A spinning child moved into a cgroup of its own: the cgroup's counter
// (the kernel's cpu.stat) lies between the child's schedstat before and
// after the scrape, and the per-process collector names the cgroup.
func TestLiveCgroup(t *testing.T) {
	root, err := UnifiedMount()
	if err != nil {
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	dir := filepath.Join(root, fmt.Sprintf("cputime-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup (root needed): %v", err)
	}
	c := startWorkload(t, "spin 0")
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		os.Remove(dir)
	})
	b0 := runtimeNanos(t, c.pid)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(c.pid)), 0); err != nil {
		t.Skipf("cannot move a process into a cgroup here: %v", err)
	}
	b1 := runtimeNanos(t, c.pid)
	// Wait until the child has used 50 ms of CPU inside the cgroup.
	for deadline := time.Now().Add(30 * time.Second); runtimeNanos(t, c.pid) < b1+0.05; {
		if time.Now().After(deadline) {
			t.Fatal("the spinning child did not get 50 ms of CPU in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cg, err := NewCgroupCollector("")
	if err != nil {
		t.Fatal(err)
	}
	// The cgroup has what the child used since it was moved (between b0
	// and b1), give or take a tick (4 ms at HZ=250) of lag.
	before := runtimeNanos(t, c.pid)
	m := gather(t, cg)
	after := runtimeNanos(t, c.pid)
	rel := "/" + filepath.Base(dir)
	var got float64
	n := 0
	for _, x := range m["cputime_cgroup_cpu_seconds_total"] {
		if label(x, "cgroup") == rel {
			got += x.Counter.GetValue()
			n++
		}
	}
	if n != 2 || got < before-b1-0.005 || got > after-b0+0.005 {
		t.Errorf("cgroup %s: %d series, %.4f s; want the child's schedstat growth since its move, %.4f to %.4f s", rel, n, got, before-b1, after-b0)
	}
	col, err := New(Options{PIDs: []int{c.pid}, Cgroups: true, SampleInterval: -1, NoExitRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	info := gather(t, col)["cputime_process_cgroup_info"]
	if len(info) != 1 || label(info[0], "cgroup") != rel || label(info[0], "pid") != strconv.Itoa(c.pid) {
		t.Errorf("cgroup info %v, want one series with cgroup %s", info, rel)
	}
}

// statForks reads the kernel's count of tasks created since boot from
// /proc/stat, apart from the collector's own reading of it.
func statForks(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^processes (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no processes line in /proc/stat")
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}

// churnThreads makes about n threads that come and go: a goroutine that
// returns while locked to its thread ends the thread (one may be an
// existing thread, or the main one, which the runtime keeps).
func churnThreads(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i += 8 {
		for range 8 {
			wg.Go(func() { runtime.LockOSThread() })
		}
		wg.Wait()
	}
}

// With exit records (root), 2,000 threads that come and go between two
// scrapes, as the kernel's fork count confirms. Without Options.Threads a
// thread is never missed (its time is in its process's series) and
// cputime_unseen_tasks_total does not move (it rose by one per thread);
// with it, each had no series of its own, and it rises by about the
// 2,000 (at least half: a few records may still be queued, and the
// runtime keeps the main thread), never by more than the kernel created.
func TestUnseenTasksOnlyMissed(t *testing.T) {
	if err := taskstats.Check(); err != nil {
		t.Skipf("no exit records here: %v", err)
	}
	const n = 2000
	for _, threads := range []bool{false, true} {
		col, err := New(Options{SampleInterval: -1, Threads: threads, MaxThreads: -1})
		if err != nil {
			t.Fatal(err)
		}
		unseen := func() float64 {
			u := gather(t, col)["cputime_unseen_tasks_total"]
			if len(u) != 1 {
				t.Fatalf("threads %v: no cputime_unseen_tasks_total", threads)
			}
			return u[0].Counter.GetValue()
		}
		u0, f0 := unseen(), statForks(t)
		churnThreads(n)
		f1, u1 := statForks(t), unseen()
		col.Close()
		if f1-f0 < n/2 {
			t.Fatalf("threads %v: the kernel created only %d tasks while %d goroutines ended their threads", threads, f1-f0, n)
		}
		t.Logf("threads %v: the kernel created %d tasks, cputime_unseen_tasks_total rose %g", threads, f1-f0, u1-u0)
		switch rise := u1 - u0; {
		case !threads && rise != 0:
			t.Errorf("without Threads, %d threads that came and went raised cputime_unseen_tasks_total by %g, want 0", n, rise)
		case threads && (rise < n/2 || rise > float64(f1-f0)):
			t.Errorf("with Threads, %d threads that came and went (the kernel created %d tasks) raised cputime_unseen_tasks_total by %g", n, f1-f0, rise)
		}
	}
}
