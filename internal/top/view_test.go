package top

import (
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/sampler"
)

// TestModel feeds made-up samples through the view: %CPU, USR% and SYS%
// over the interval; a new task marked once; an exited one shown once
// with its exit time or bracket; names with escapes made harmless.
func TestModel(t *testing.T) {
	at := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	created := at.Add(-time.Hour)
	task := func(pid int, user, kernel, delta time.Duration, isNew bool) sampler.Task {
		return sampler.Task{PID: pid, Name: "p" + string(rune('0'+pid)), State: 'S', Delta: delta, New: isNew,
			Times: cputime.Times{Creation: created, User: user, Kernel: kernel}}
	}
	m := newModel()
	first := &sampler.Sample{Time: at, First: true, Processes: []sampler.Task{
		task(1, time.Second, time.Second, 0, false),
		task(2, 0, 0, 0, false),
	}}
	rows := m.build(first, false, nil)
	for _, r := range rows {
		if r.cpu >= 0 || r.ev != evNone {
			t.Errorf("first refresh: row %+v has a %%CPU or an event", r)
		}
	}
	second := &sampler.Sample{Time: at.Add(time.Second), Interval: time.Second, Processes: []sampler.Task{
		task(1, 1500*time.Millisecond, 1250*time.Millisecond, 750*time.Millisecond, false),
		task(3, 100*time.Millisecond, 0, 100*time.Millisecond, true),
	}, ExitedProcesses: []sampler.Exited{
		{Task: task(2, 0, 0, 0, false), LastSeen: at, GoneAt: at.Add(time.Second)},
	}}
	rows = m.build(second, false, nil)
	sortRows(rows, byCPU)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	r := rows[0]
	if r.pid != 1 || r.cpu != 75 || r.usr != 50 || r.sys != 25 {
		t.Errorf("busy row %+v: want 75 %% = 50 user + 25 system", r)
	}
	if rows[1].pid != 3 || rows[1].ev != evNew || rows[1].cpu != 10 {
		t.Errorf("new row %+v", rows[1])
	}
	if rows[2].pid != 2 || rows[2].ev != evExited || rows[2].state != 'X' {
		t.Errorf("exited row %+v", rows[2])
	}
	ew := eventWidth(rows)
	line := string(formatRow(nil, &rows[2], ew, true, at))
	if !strings.Contains(line, "gone@06:00:01.000") {
		t.Errorf("exited row %q lacks its bracket", line)
	}
	hdr := string(appendHeader(nil, false, ew, true))
	if strings.Index(hdr, "NAME") != strings.Index(line, "p2") {
		t.Errorf("NAME column misaligned:\n%s\n%s", hdr, line)
	}
	if got := string(formatRow(nil, &rows[1], ew, true, at)); !strings.Contains(got, " new ") || !strings.Contains(got, "05:00:00.000") {
		t.Errorf("new row %q", got)
	}
	evil := row{pid: 9, name: "a\x1b[2Jb\u202ec\n", cpu: -1, usr: -1, sys: -1}
	if got := string(formatRow(nil, &evil, 5, true, at)); !strings.HasSuffix(got, "a?[2Jb?c?") {
		t.Errorf("name not made harmless: %q", got)
	}
	if got := string(appendCPUTime(nil, 61*time.Minute+2*time.Second+345*time.Millisecond)); got != "61:02.345" {
		t.Errorf("TIME+ %q", got)
	}
}

func TestParseArgs(t *testing.T) {
	o, err := parseArgs([]string{"-b", "-n", "11", "-d", "0.1", "-H", "-p", "12,34", "-p56"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.batch || o.n != 11 || o.delay != 100*time.Millisecond || !o.threads || len(o.pids) != 3 || o.pids[2] != 56 {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range [][]string{{"-n", "0"}, {"-d", "x"}, {"-p", "0"}, {"-p"}, {"--json"}, {"-x"}, {"-d", "NaN"}} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDeniedShown: a process whose files may not be read is a row of its
// own in both views, marked "denied" with its CPU time and no %CPU, and
// counted in the status line; a thread that took its process's main
// thread id by exec shows its USR% and SYS% within its Delta.
func TestDeniedShown(t *testing.T) {
	at := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	for _, threads := range []bool{false, true} {
		m := newModel()
		x := &sampler.Sample{Time: at, Interval: time.Second, Denied: []sampler.Task{
			{PID: 42, Times: cputime.Times{User: 3 * time.Second, Kernel: time.Second}},
		}}
		rows := m.build(x, threads, nil)
		if len(rows) != 1 || rows[0].ev != evDenied || rows[0].pid != 42 || rows[0].total != 4*time.Second || rows[0].cpu >= 0 {
			t.Fatalf("threads %v: rows %+v", threads, rows)
		}
		f := frame{at: at, interval: time.Second, rows: rows, threads: threads}
		f.newN, f.exitedN, f.deniedN = counts(rows)
		if s := string(statusLine(&f, byCPU)); !strings.Contains(s, "1 access denied") {
			t.Errorf("status line %q does not count the denied process", s)
		}
		line := string(formatRow(nil, &rows[0], eventWidth(rows), true, at))
		if f := strings.Fields(line); len(f) < 9 || f[0] != "42" || f[1] != "-" || f[4] != "-" || f[5] != "0:04.000" || f[8] != "denied" {
			t.Errorf("threads %v: denied row %q", threads, line)
		}
	}
	m := newModel()
	x := &sampler.Sample{Time: at, Interval: time.Second, Threads: []sampler.Task{
		{PID: 7, TID: 7, New: true, Delta: 500 * time.Millisecond, Times: cputime.Times{User: 3 * time.Second, Kernel: time.Second}},
	}}
	r := m.build(x, true, nil)[0]
	if r.cpu != 50 || r.usr+r.sys > 50.001 || r.usr < 37 {
		t.Errorf("the thread that exec'd: %%CPU %.1f = USR %.1f + SYS %.1f, want 50 split 3:1", r.cpu, r.usr, r.sys)
	}
}
