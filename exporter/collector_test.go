package exporter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/sampler"
)

// fakeSource returns its samples in turn, the last one again and again.
type fakeSource struct {
	samples []sampler.Sample
	n       int
	err     error
	closed  bool
}

func (f *fakeSource) RefreshInto(dst *sampler.Sample) error {
	if f.err != nil {
		return f.err
	}
	s := f.samples[min(f.n, len(f.samples)-1)]
	f.n++
	// Copies, as the sampler reuses dst's storage.
	*dst = sampler.Sample{
		Processes:       append(dst.Processes[:0], s.Processes...),
		Threads:         append(dst.Threads[:0], s.Threads...),
		ExitedProcesses: append(dst.ExitedProcesses[:0], s.ExitedProcesses...),
		ExitedThreads:   append(dst.ExitedThreads[:0], s.ExitedThreads...),
		Denied:          append(dst.Denied[:0], s.Denied...),
		Errors:          append(dst.Errors[:0], s.Errors...),
	}
	return nil
}

func (f *fakeSource) Close() error { f.closed = true; return nil }

var epoch = time.Unix(1700000000, 250_000_000)

func proc(pid int, name string, user, kernel time.Duration) sampler.Task {
	return sampler.Task{PID: pid, Name: name, Threads: 1, Times: cputime.Times{
		Creation: epoch.Add(time.Duration(pid) * time.Millisecond), User: user, Kernel: kernel}}
}

func thread(pid, tid int, name string, user, kernel, delta time.Duration) sampler.Task {
	t := proc(pid, name, user, kernel)
	t.TID, t.Threads, t.Delta = tid, 0, delta
	return t
}

func collect(t *testing.T, c prometheus.Collector, want string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

const cpuHelp = `# HELP cputime_process_cpu_seconds_total CPU time of the process in each mode (user, system), exited threads included: the kernel's exact run time in ns divided by 1e9, split by its tick samples.
# TYPE cputime_process_cpu_seconds_total counter
`

func TestProcessMetrics(t *testing.T) {
	first := sampler.Sample{Processes: []sampler.Task{
		proc(10, "init", 1500*time.Millisecond, 250*time.Millisecond),
		proc(20, "worker", 123456789*time.Nanosecond, 1),
	}}
	second := sampler.Sample{Processes: first.Processes[:1],
		ExitedProcesses: []sampler.Exited{{Task: proc(20, "worker", 2*time.Second, 3*time.Millisecond), GoneAt: epoch.Add(time.Minute)}}}
	src := &fakeSource{samples: []sampler.Sample{first, first, second, {Processes: first.Processes[:1]}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	collect(t, c, cpuHelp+`cputime_process_cpu_seconds_total{mode="user",name="init",pid="10"} 1.5
cputime_process_cpu_seconds_total{mode="system",name="init",pid="10"} 0.25
cputime_process_cpu_seconds_total{mode="user",name="worker",pid="20"} 0.123456789
cputime_process_cpu_seconds_total{mode="system",name="worker",pid="20"} 1e-09
# HELP cputime_process_start_time_seconds Creation time of the process, seconds since the Unix epoch (the kernel's start time in CLOCK_BOOTTIME, not /proc/stat btime).
# TYPE cputime_process_start_time_seconds gauge
cputime_process_start_time_seconds{name="init",pid="10"} 1.70000000026e+09
cputime_process_start_time_seconds{name="worker",pid="20"} 1.70000000027e+09
# HELP cputime_process_threads Number of live threads of the process.
# TYPE cputime_process_threads gauge
cputime_process_threads{name="init",pid="10"} 1
cputime_process_threads{name="worker",pid="20"} 1
`, "cputime_process_cpu_seconds_total", "cputime_process_start_time_seconds", "cputime_process_threads", "cputime_process_exit_time_seconds")

	// The worker exited: its final values and exit time, in one scrape.
	exitHelp := `# HELP cputime_process_exit_time_seconds Exit time of a process that exited since the previous scrape, seconds since the Unix epoch (the instant its pidfd reported, else the first instant it was seen gone); exported in one scrape, with its final CPU time.
# TYPE cputime_process_exit_time_seconds gauge
`
	collect(t, c, cpuHelp+`cputime_process_cpu_seconds_total{mode="user",name="init",pid="10"} 1.5
cputime_process_cpu_seconds_total{mode="system",name="init",pid="10"} 0.25
cputime_process_cpu_seconds_total{mode="user",name="worker",pid="20"} 2
cputime_process_cpu_seconds_total{mode="system",name="worker",pid="20"} 0.003
`+exitHelp+`cputime_process_exit_time_seconds{name="worker",pid="20"} 1.70000006025e+09
`, "cputime_process_cpu_seconds_total", "cputime_process_exit_time_seconds")

	// Then the series ends.
	collect(t, c, cpuHelp+`cputime_process_cpu_seconds_total{mode="user",name="init",pid="10"} 1.5
cputime_process_cpu_seconds_total{mode="system",name="init",pid="10"} 0.25
`, "cputime_process_cpu_seconds_total", "cputime_process_exit_time_seconds")
}

// A process seen only by a background refresh between two scrapes is
// exported by the next scrape with its final values; its exit instant is
// the one the pidfd gave, where it gave one.
func TestShortLivedBetweenScrapes(t *testing.T) {
	short := proc(30, "short", 300*time.Millisecond, 0)
	short.New = true
	exited := short
	exited.Times.Exit = epoch.Add(2 * time.Second)
	src := &fakeSource{samples: []sampler.Sample{
		{},                                 // baseline
		{Processes: []sampler.Task{short}}, // background refresh
		{ExitedProcesses: []sampler.Exited{{Task: exited, GoneAt: epoch.Add(3 * time.Second)}}}, // background
		{}, // scrape
	}}
	forks := []uint64{100, 101}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, func() (uint64, error) { n := forks[0]; forks = forks[1:]; return n, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.mu.Lock()
	c.refreshProcs()
	c.refreshProcs()
	c.mu.Unlock()
	collect(t, c, cpuHelp+`cputime_process_cpu_seconds_total{mode="user",name="short",pid="30"} 0.3
cputime_process_cpu_seconds_total{mode="system",name="short",pid="30"} 0
# HELP cputime_process_exit_time_seconds Exit time of a process that exited since the previous scrape, seconds since the Unix epoch (the instant its pidfd reported, else the first instant it was seen gone); exported in one scrape, with its final CPU time.
# TYPE cputime_process_exit_time_seconds gauge
cputime_process_exit_time_seconds{name="short",pid="30"} 1.70000000225e+09
# HELP cputime_unseen_tasks_total Tasks (processes and threads) the kernel created since the exporter started that came and went without being exported as series of their own: the kernel's fork count (/proc/stat processes) less the tasks seen appear. Only when every process is watched.
# TYPE cputime_unseen_tasks_total counter
cputime_unseen_tasks_total 0
`, "cputime_process_cpu_seconds_total", "cputime_process_exit_time_seconds", "cputime_unseen_tasks_total")
}

// An exited process whose id and name a new process took: the live one's
// series wins, and the scrape does not fail on a duplicate series.
func TestReusedIDNoDuplicate(t *testing.T) {
	live := proc(40, "sh", 1*time.Second, 0)
	old := proc(40, "sh", 5*time.Second, 0)
	src := &fakeSource{samples: []sampler.Sample{{}, {Processes: []sampler.Task{live},
		ExitedProcesses: []sampler.Exited{{Task: old, GoneAt: epoch}, {Task: old, GoneAt: epoch}}}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}

func TestThreadCap(t *testing.T) {
	threads := []sampler.Task{
		thread(1, 1, "main", 5*time.Second, 0, 0),
		thread(1, 2, "busy", 1*time.Second, 0, 900*time.Millisecond),
		thread(1, 3, "idle", 9*time.Second, 0, 0),
		thread(1, 4, "warm", 0, 100*time.Millisecond, 100*time.Millisecond),
	}
	fresh := thread(1, 5, "new", 0, 0, 0)
	fresh.New = true
	procs := &fakeSource{samples: []sampler.Sample{{Processes: []sampler.Task{proc(1, "main", 15*time.Second, 0)}}}}
	ts := &fakeSource{samples: []sampler.Sample{{Threads: threads}, {Threads: append(threads, fresh)}}}
	forks := uint64(1000)
	c, err := newCollector(Options{SampleInterval: -1, Threads: true, MaxThreads: 2}, procs, ts, func() (uint64, error) { return forks, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	forks += 3 // one seen (thread 5), two unseen
	collect(t, c, `# HELP cputime_thread_cpu_seconds_total CPU time of the thread in each mode (user, system): the kernel's exact run time in ns divided by 1e9.
# TYPE cputime_thread_cpu_seconds_total counter
cputime_thread_cpu_seconds_total{mode="user",name="busy",pid="1",tid="2"} 1
cputime_thread_cpu_seconds_total{mode="system",name="busy",pid="1",tid="2"} 0
cputime_thread_cpu_seconds_total{mode="user",name="warm",pid="1",tid="4"} 0
cputime_thread_cpu_seconds_total{mode="system",name="warm",pid="1",tid="4"} 0.1
# HELP cputime_thread_series_dropped_total Thread series left out of scrapes by the cap on threads per scrape (--threads.max), summed over scrapes.
# TYPE cputime_thread_series_dropped_total counter
cputime_thread_series_dropped_total 3
# HELP cputime_unseen_tasks_total Tasks (processes and threads) the kernel created since the exporter started that came and went without being exported as series of their own: the kernel's fork count (/proc/stat processes) less the tasks seen appear. Only when every process is watched.
# TYPE cputime_unseen_tasks_total counter
cputime_unseen_tasks_total 2
`, "cputime_thread_cpu_seconds_total", "cputime_thread_series_dropped_total", "cputime_unseen_tasks_total")
}

func TestRefreshError(t *testing.T) {
	src := &fakeSource{samples: []sampler.Sample{{}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.err = errors.New("no /proc")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "no /proc") {
		t.Errorf("a failed refresh: got %v, want the scrape to fail with it", err)
	}
	c.Close()
	if !src.closed {
		t.Error("Close did not close the sampler")
	}
	if _, err := newCollector(Options{}, src, nil, nil); err == nil {
		t.Error("newCollector with a failing source: no error")
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"bash":             "bash",
		"kworker/0:1-ev":   "kworker/0:1-ev",
		"a\nb":             "a?b",
		"\x1b[31mred":      "?[31mred",
		"evil\u202Eexe":    "evil?exe",
		"caf\xc3":          "caf?",
		"\xff\xfe":         "??",
		"наука":            "наука",
		"Web Content (12)": "Web Content (12)",
	} {
		if got := LabelValue(in); got != want {
			t.Errorf("LabelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForksFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "stat")
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	if n, err := forksFrom(write("cpu  1 2 3\nctxt 99\nprocesses 12345\nprocs_running 1\n")); err != nil || n != 12345 {
		t.Errorf("got %d, %v; want 12345", n, err)
	}
	for _, bad := range []string{"cpu 1\n", "processes x\n", "processes -1\n"} {
		if _, err := forksFrom(write(bad)); !errors.Is(err, cputime.ErrInvalidData) {
			t.Errorf("%q: got %v, want ErrInvalidData", bad, err)
		}
	}
	if _, err := forksFrom(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// Without scrapes, the exits kept for the next one stay bounded.
func TestPendingBounded(t *testing.T) {
	var exited []sampler.Exited
	for pid := 1; pid <= maxPending/2+1; pid++ {
		exited = append(exited, sampler.Exited{Task: proc(pid, "x", 0, 0)})
	}
	src := &fakeSource{samples: []sampler.Sample{{}, {ExitedProcesses: exited}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 5 {
		c.refreshProcs()
	}
	if len(c.pending) != maxPending || c.pending[len(c.pending)-1].PID != maxPending/2+1 {
		t.Errorf("%d pending exits, the last of pid %d; want %d, the latest kept", len(c.pending), c.pending[len(c.pending)-1].PID, maxPending)
	}
}

// TestDeniedMetrics: a process the exporter may not read is marked by a
// series of its own and counted, not silently left out.
func TestDeniedMetrics(t *testing.T) {
	src := &fakeSource{samples: []sampler.Sample{{
		Processes: []sampler.Task{proc(10, "init", time.Second, 0)},
		Denied:    []sampler.Task{{PID: 31, Times: cputime.Times{User: time.Second}}, {PID: 32}},
	}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	collect(t, c, `# HELP cputime_process_access_denied 1 for each process that exists but whose files the exporter may not read (another user's under hidepid=1, ptrace rules): its other series are absent. count(cputime_process_access_denied) says how many.
# TYPE cputime_process_access_denied gauge
cputime_process_access_denied{pid="31"} 1
cputime_process_access_denied{pid="32"} 1
# HELP cputime_processes_access_denied Number of processes this scrape found but may not read (see cputime_process_access_denied).
# TYPE cputime_processes_access_denied gauge
cputime_processes_access_denied 2
`, "cputime_process_access_denied", "cputime_processes_access_denied")
}
