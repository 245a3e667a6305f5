package exporter

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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

// scrape gathers c and returns its samples as "name{label=value,...}"
// (labels sorted by name) to value.
func scrape(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// want checks the samples of got whose names start with prefix against
// want, exactly.
func want(t *testing.T, got map[string]float64, prefix string, want map[string]float64) {
	t.Helper()
	for k, v := range got {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if w, ok := want[k]; !ok {
			t.Errorf("unexpected %s %g", k, v)
		} else if !math.IsNaN(w) && math.Abs(w-v) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("%s = %g, want %g", k, v, w)
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("missing %s (want %g)", k, w)
		}
	}
}

// clock is a fake time for the collector's expiry of exited tasks.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProcessMetrics(t *testing.T) {
	first := sampler.Sample{Processes: []sampler.Task{
		proc(10, "init", 1500*time.Millisecond, 250*time.Millisecond),
		proc(20, "worker", 123456789*time.Nanosecond, 1),
	}}
	second := sampler.Sample{Processes: first.Processes[:1],
		ExitedProcesses: []sampler.Exited{{Task: proc(20, "worker", 2*time.Second, 3*time.Millisecond), GoneAt: epoch.Add(time.Minute)}}}
	src := &fakeSource{samples: []sampler.Sample{first, first, second, {Processes: first.Processes[:1]}}}
	c, err := newCollector(Options{SampleInterval: -1, ExitedKeep: time.Minute}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clk := &clock{epoch.Add(time.Hour)}
	c.now = clk.now
	// start: the creation in Unix seconds to the hundredth (epoch + pid ms).
	want(t, scrape(t, c), "cputime_process_", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=init,pid=10,start=1700000000.26}`:     1.5,
		`cputime_process_cpu_seconds_total{mode=system,name=init,pid=10,start=1700000000.26}`:   0.25,
		`cputime_process_cpu_seconds_total{mode=user,name=worker,pid=20,start=1700000000.27}`:   0.123456789,
		`cputime_process_cpu_seconds_total{mode=system,name=worker,pid=20,start=1700000000.27}`: 1e-9,
		`cputime_process_start_time_seconds{name=init,pid=10,start=1700000000.26}`:              1700000000.26,
		`cputime_process_start_time_seconds{name=worker,pid=20,start=1700000000.27}`:            1700000000.27,
		`cputime_process_threads{name=init,pid=10,start=1700000000.26}`:                         1,
		`cputime_process_threads{name=worker,pid=20,start=1700000000.27}`:                       1,
	})
	// The worker exited: its final values and exit time, for ExitedKeep.
	exited := map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=init,pid=10,start=1700000000.26}`:     1.5,
		`cputime_process_cpu_seconds_total{mode=system,name=init,pid=10,start=1700000000.26}`:   0.25,
		`cputime_process_cpu_seconds_total{mode=user,name=worker,pid=20,start=1700000000.27}`:   2,
		`cputime_process_cpu_seconds_total{mode=system,name=worker,pid=20,start=1700000000.27}`: 0.003,
		`cputime_process_exit_time_seconds{name=worker,pid=20,start=1700000000.27}`:             1700000060.25,
	}
	for range 2 {
		want(t, scrape(t, c), "cputime_process_[ce]", exited)
		clk.advance(30 * time.Second)
	}
	// Past ExitedKeep, the series ends.
	clk.advance(time.Second)
	want(t, scrape(t, c), "cputime_process_cpu", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=init,pid=10,start=1700000000.26}`:   1.5,
		`cputime_process_cpu_seconds_total{mode=system,name=init,pid=10,start=1700000000.26}`: 0.25,
	})
}

// A process seen only by a background refresh between two scrapes is
// exported by the next scrape with its final values; its exit instant is
// the one the pidfd gave, where it gave one. Without exit records, an exit
// whose times were not read after it (reaped first) is counted.
func TestShortLivedBetweenScrapes(t *testing.T) {
	for _, final := range []bool{true, false} {
		shortLivedBetweenScrapes(t, final)
	}
}

func shortLivedBetweenScrapes(t *testing.T, final bool) {
	short := proc(30, "short", 300*time.Millisecond, 0)
	short.New = true
	exited := short
	exited.Times.Exit = epoch.Add(2 * time.Second)
	src := &fakeSource{samples: []sampler.Sample{
		{},                                 // baseline
		{Processes: []sampler.Task{short}}, // background refresh
		{ExitedProcesses: []sampler.Exited{{Task: exited, GoneAt: epoch.Add(3 * time.Second), Final: final}}}, // background
		{}, // scrape
	}}
	notFinal := 1.0
	if final {
		notFinal = 0
	}
	forks := []uint64{100, 101}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, func() (uint64, error) { n := forks[0]; forks = forks[1:]; return n, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.mu.Lock()
	c.refresh()
	c.refresh()
	c.mu.Unlock()
	want(t, scrape(t, c), "cputime_", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=short,pid=30,start=1700000000.28}`:   0.3,
		`cputime_process_cpu_seconds_total{mode=system,name=short,pid=30,start=1700000000.28}`: 0,
		`cputime_process_start_time_seconds{name=short,pid=30,start=1700000000.28}`:            1700000000.28,
		`cputime_process_exit_time_seconds{name=short,pid=30,start=1700000000.28}`:             1700000002.25,
		`cputime_unseen_tasks_total{}`:                 0,
		`cputime_collect_errors_total{reason=metric}`:  0,
		`cputime_collect_errors_total{reason=refresh}`: 0,
		`cputime_exit_records{}`:                       0,
		`cputime_exits_not_final_total{}`:              notFinal,
		`cputime_exited_series_dropped_total{}`:        0,
		`cputime_processes_access_denied{}`:            0,
		`cputime_read_errors_total{}`:                  0,
		`cputime_scrape_duration_seconds{}`:            math.NaN(), // any
	})
}

// A process that took an exited process's pid has series of its own, even
// when it started in the same tick; the exited one keeps its final values.
func TestReusedPID(t *testing.T) {
	a := proc(40, "sh", 5*time.Second, 0)
	b := proc(40, "sh", 1*time.Second, 0)
	b.New = true
	b.Times.Creation = a.Times.Creation.Add(3 * time.Millisecond) // the same tick
	b2 := b
	b2.New = false
	src := &fakeSource{samples: []sampler.Sample{{Processes: []sampler.Task{a}},
		{Processes: []sampler.Task{b}, ExitedProcesses: []sampler.Exited{{Task: a, GoneAt: epoch}}}, {Processes: []sampler.Task{b2}}}}
	c, err := newCollector(Options{SampleInterval: -1}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	want(t, scrape(t, c), "cputime_process_cpu", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=sh,pid=40,start=1700000000.29}`:     5,
		`cputime_process_cpu_seconds_total{mode=system,name=sh,pid=40,start=1700000000.29}`:   0,
		`cputime_process_cpu_seconds_total{mode=user,name=sh,pid=40,start=1700000000.29_1}`:   1,
		`cputime_process_cpu_seconds_total{mode=system,name=sh,pid=40,start=1700000000.29_1}`: 0,
	})
}

// fakeExits hands out its records at the next drain.
type fakeExits struct {
	records []exitRecord
	closed  bool
}

func (f *fakeExits) drain(fn func(exitRecord)) (uint64, error) {
	for _, r := range f.records {
		fn(r)
	}
	f.records = nil
	return 0, nil
}

func (f *fakeExits) Close() error { f.closed = true; return nil }

// The kernel's exit record gives the final times of the process it ends
// (matched by pid and creation, not by pid alone), and a series of its own
// to a process that came and went between two refreshes.
func TestExitRecords(t *testing.T) {
	a := proc(50, "job", 100*time.Millisecond, 0) // read while it ran
	src := &fakeSource{samples: []sampler.Sample{{Processes: []sampler.Task{a}},
		{ExitedProcesses: []sampler.Exited{{Task: a, GoneAt: epoch.Add(time.Second)}}}}}
	exits := &fakeExits{}
	c, err := newCollector(Options{}, src, exits, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !exits.closed && c.stop == nil {
		t.Error("no drain between scrapes with exit records")
	}
	exitAt := epoch.Add(900 * time.Millisecond)
	exits.records = []exitRecord{
		// a: its record's creation is late by the delivery.
		{pid: 50, name: "job", creation: a.Times.Creation.Add(4 * time.Millisecond), window: 100 * time.Millisecond,
			user: 250 * time.Millisecond, kernel: 50 * time.Millisecond, total: 300 * time.Millisecond, split: true, exit: exitAt},
		// Another process with pid 50 long before: not a's.
		{pid: 50, name: "job", creation: epoch.Add(-time.Hour), window: 100 * time.Millisecond, total: 7 * time.Millisecond, exit: exitAt},
		// One that came and went unseen.
		{pid: 51, name: "blip", creation: epoch.Add(1234 * time.Millisecond), window: 100 * time.Millisecond,
			user: 2 * time.Millisecond, kernel: 1 * time.Millisecond, total: 3 * time.Millisecond, split: true, exit: exitAt},
	}
	want(t, scrape(t, c), "cputime_process_[ce]", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=job,pid=50,start=1700000000.30}`:    0.25,
		`cputime_process_cpu_seconds_total{mode=system,name=job,pid=50,start=1700000000.30}`:  0.05,
		`cputime_process_exit_time_seconds{name=job,pid=50,start=1700000000.30}`:              1700000001.15,
		`cputime_process_cpu_seconds_total{mode=user,name=job,pid=50,start=1699996400.25}`:    0.007,
		`cputime_process_cpu_seconds_total{mode=system,name=job,pid=50,start=1699996400.25}`:  0,
		`cputime_process_exit_time_seconds{name=job,pid=50,start=1699996400.25}`:              1700000001.15,
		`cputime_process_cpu_seconds_total{mode=user,name=blip,pid=51,start=1700000001.48}`:   0.002,
		`cputime_process_cpu_seconds_total{mode=system,name=blip,pid=51,start=1700000001.48}`: 0.001,
		`cputime_process_exit_time_seconds{name=blip,pid=51,start=1700000001.48}`:             1700000001.15,
	})
	c.Close()
	if !exits.closed {
		t.Error("Close left the exit records open")
	}
}

// Exited tasks kept are bounded by MaxExited, the oldest dropped and
// counted.
func TestExitedBounded(t *testing.T) {
	var live, exited []sampler.Exited
	var procs []sampler.Task
	for pid := 1; pid <= 10; pid++ {
		procs = append(procs, proc(pid, "x", 0, 0))
		exited = append(exited, sampler.Exited{Task: proc(pid, "x", 0, 0)})
	}
	_ = live
	src := &fakeSource{samples: []sampler.Sample{{Processes: procs}, {ExitedProcesses: exited}, {}}}
	c, err := newCollector(Options{SampleInterval: -1, MaxExited: 4}, src, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := scrape(t, c)
	if n := got["cputime_exited_series_dropped_total{}"]; n != 6 {
		t.Errorf("dropped %g, want 6", n)
	}
	for pid := 1; pid <= 10; pid++ {
		_, ok := got[fmt.Sprintf("cputime_process_exit_time_seconds{name=x,pid=%d,start=1700000000.%02d}", pid, 25+pid/10)]
		if ok != (pid > 6) {
			t.Errorf("pid %d: kept %v, want the 4 latest", pid, ok)
		}
	}
}

func TestThreadCap(t *testing.T) {
	threads := []sampler.Task{
		thread(1, 1, "main", 5*time.Second, 0, 0),
		thread(1, 2, "busy", 1*time.Second, 0, 900*time.Millisecond),
		thread(1, 3, "idle", 9*time.Second, 0, 0),
		thread(1, 4, "warm", 0, 100*time.Millisecond, 100*time.Millisecond),
	}
	grown := slices.Clone(threads)
	grown[1].Times.User += 900 * time.Millisecond
	grown[3].Times.Kernel += 100 * time.Millisecond
	fresh := thread(1, 5, "new", 0, 0, 0)
	fresh.New = true
	p := []sampler.Task{proc(1, "main", 15*time.Second, 0)}
	src := &fakeSource{samples: []sampler.Sample{{Processes: p, Threads: threads}, {Processes: p, Threads: threads},
		{Processes: p, Threads: append(grown, fresh)}}}
	forks := uint64(1000)
	c, err := newCollector(Options{SampleInterval: -1, Threads: true, MaxThreads: 2}, src, nil, func() (uint64, error) { return forks, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scrape(t, c) // the first: the most CPU in all (idle, main)
	forks += 3   // one seen (thread 5), two unseen
	want(t, scrape(t, c), "cputime_thread_", map[string]float64{
		`cputime_thread_cpu_seconds_total{mode=user,name=busy,pid=1,start=1700000000.25,tid=2}`:   1.9,
		`cputime_thread_cpu_seconds_total{mode=system,name=busy,pid=1,start=1700000000.25,tid=2}`: 0,
		`cputime_thread_cpu_seconds_total{mode=user,name=warm,pid=1,start=1700000000.25,tid=4}`:   0,
		`cputime_thread_cpu_seconds_total{mode=system,name=warm,pid=1,start=1700000000.25,tid=4}`: 0.2,
		`cputime_thread_start_time_seconds{name=busy,pid=1,start=1700000000.25,tid=2}`:            1700000000.251,
		`cputime_thread_start_time_seconds{name=warm,pid=1,start=1700000000.25,tid=4}`:            1700000000.251,
		`cputime_thread_series_dropped_total{}`:                                                   5,
	})
	if n := scrape(t, c)["cputime_unseen_tasks_total{}"]; n != 2 {
		t.Errorf("unseen %g, want 2", n)
	}
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
	mfs, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "no /proc") {
		t.Errorf("a failed refresh: got %v, want the scrape to report it", err)
	}
	// The rest of the collection goes on, and counts the error.
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			if len(m.Label) == 1 {
				got[mf.GetName()+"{"+m.Label[0].GetValue()+"}"] = m.GetCounter().GetValue()
			} else {
				got[mf.GetName()] = 1
			}
		}
	}
	if got["cputime_scrape_duration_seconds"] == 0 || got["cputime_collect_errors_total{refresh}"] != 1 {
		t.Errorf("after a failed refresh: %v, want cputime_scrape_duration_seconds and one refresh error", got)
	}
	c.Close()
	if !src.closed {
		t.Error("Close did not close the sampler")
	}
	if _, err := newCollector(Options{SampleInterval: -1}, src, nil, nil); err == nil {
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
# HELP cputime_processes_access_denied Number of processes this scrape found but may not read, skipped (see cputime_process_access_denied).
# TYPE cputime_processes_access_denied gauge
cputime_processes_access_denied 2
`, "cputime_process_access_denied", "cputime_processes_access_denied")
}

// A final record never makes the total exceed the record's, nor a mode go
// below what was exported: the record's total is split between the modes
// within those bounds; a record short of the last read leaves it.
func TestExitRecordSplit(t *testing.T) {
	a := proc(60, "go", 200*time.Millisecond, 50*time.Millisecond)
	b := proc(61, "go", 300*time.Millisecond, 0)
	src := &fakeSource{samples: []sampler.Sample{{Processes: []sampler.Task{a, b}},
		{ExitedProcesses: []sampler.Exited{{Task: a, GoneAt: epoch}, {Task: b, GoneAt: epoch}}}, {}}}
	exits := &fakeExits{}
	c, err := newCollector(Options{}, src, exits, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exits.records = []exitRecord{
		{pid: 60, name: "go", creation: a.Times.Creation, window: 100 * time.Millisecond,
			user: 270 * time.Millisecond, kernel: 5100 * time.Microsecond, total: 275100 * time.Microsecond, split: true, exit: epoch},
		{pid: 61, name: "go", creation: b.Times.Creation, window: 100 * time.Millisecond,
			user: 298 * time.Millisecond, total: 298 * time.Millisecond, split: true, exit: epoch},
	}
	want(t, scrape(t, c), "cputime_process_cpu", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=go,pid=60,start=1700000000.31}`:   0.2251,
		`cputime_process_cpu_seconds_total{mode=system,name=go,pid=60,start=1700000000.31}`: 0.05,
		`cputime_process_cpu_seconds_total{mode=user,name=go,pid=61,start=1700000000.31}`:   0.3,
		`cputime_process_cpu_seconds_total{mode=system,name=go,pid=61,start=1700000000.31}`: 0,
	})
}

// An exit record drained between the sampler's last read of a live
// process and its read of the zombie: the record comes from the last
// thread before the address-space teardown, the zombie's times after it,
// so the larger (later) total is the final one, whichever came first.
// Neither mode goes back.
func TestZombieReadAfterExitRecord(t *testing.T) {
	a := proc(70, "go", 100*time.Millisecond, 20*time.Millisecond) // read while it ran
	zombie := proc(70, "go", 254*time.Millisecond, 50*time.Millisecond)
	zombie.State = 'Z'
	later := proc(70, "go", 110*time.Millisecond, 20*time.Millisecond)
	// The collector's first refresh reads a; each scrape refreshes, then
	// drains the exit records.
	src := &fakeSource{samples: []sampler.Sample{{Processes: []sampler.Task{a}}, {Processes: []sampler.Task{later}},
		{ExitedProcesses: []sampler.Exited{{Task: zombie, GoneAt: epoch.Add(time.Second)}}}, {}}}
	exits := &fakeExits{}
	c, err := newCollector(Options{}, src, exits, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exits.records = []exitRecord{{pid: 70, name: "go", creation: a.Times.Creation, window: 100 * time.Millisecond,
		user: 252 * time.Millisecond, kernel: 48 * time.Millisecond, total: 300 * time.Millisecond, split: true, exit: epoch}}
	want(t, scrape(t, c), "cputime_process_cpu", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=go,pid=70,start=1700000000.32}`:   0.252,
		`cputime_process_cpu_seconds_total{mode=system,name=go,pid=70,start=1700000000.32}`: 0.048,
	})
	want(t, scrape(t, c), "cputime_process_cpu", map[string]float64{
		`cputime_process_cpu_seconds_total{mode=user,name=go,pid=70,start=1700000000.32}`:   0.254,
		`cputime_process_cpu_seconds_total{mode=system,name=go,pid=70,start=1700000000.32}`: 0.05,
	})
}
