package top

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/sampler"
)

// RES: /proc/PID/statm's resident pages; read again only for a process
// that ran or is new, the last figure kept for one that did not.
func TestRSS(t *testing.T) {
	root := t.TempDir()
	statm := func(pid int, pages string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "statm"), []byte("9999 "+pages+" 10 1 0 50 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	statm(1, "100")
	statm(2, "200")
	m := newModel()
	m.mem.fs = procfs.NewFS(root)
	task := func(pid int, delta time.Duration) sampler.Task {
		return sampler.Task{PID: pid, Name: "p", Delta: delta, Times: cputime.Times{User: time.Second}}
	}
	rss := func(rows []row) map[int]int64 {
		out := map[int]int64{}
		for _, r := range rows {
			if v, ok := out[r.pid]; ok && v != r.rss {
				t.Errorf("process %d: rows with RES %d and %d in one refresh", r.pid, v, r.rss)
			}
			out[r.pid] = r.rss
		}
		return out
	}
	page := int64(os.Getpagesize())
	got := rss(m.build(&sampler.Sample{First: true, Processes: []sampler.Task{task(1, 0), task(2, 0), task(3, 0)}}, false, nil))
	if got[1] != 100*page || got[2] != 200*page || got[3] != -1 {
		t.Errorf("first refresh: RES %v, want 100 and 200 pages, and -1 for a process without statm", got)
	}
	// Both change; only process 1 ran: 2 keeps its figure.
	statm(1, "150")
	statm(2, "250")
	got = rss(m.build(&sampler.Sample{Interval: time.Second, Processes: []sampler.Task{task(1, time.Millisecond), task(2, 0)}}, false, nil))
	if got[1] != 150*page || got[2] != 200*page {
		t.Errorf("second refresh: RES %v, want 150 pages (ran, read again) and 200 (idle, kept)", got)
	}
	// In the thread view, one idle thread before a busy one of the same
	// process does not keep the old figure for it.
	thr := func(pid, tid int, delta time.Duration) sampler.Task {
		x := task(pid, delta)
		x.TID = tid
		return x
	}
	m2 := newModel()
	m2.mem.fs = procfs.NewFS(root)
	m2.build(&sampler.Sample{First: true, Threads: []sampler.Task{thr(2, 2, 0)}}, true, nil)
	statm(2, "300")
	got = rss(m2.build(&sampler.Sample{Interval: time.Second, Threads: []sampler.Task{thr(2, 2, 0), thr(2, 3, time.Millisecond)}}, true, nil))
	if got[2] != 300*page {
		t.Errorf("thread view: RES %v, want 300 pages read again for the busy thread's process", got)
	}
	if got := parseStatm([]byte("garbage")); got != -1 {
		t.Errorf("parseStatm(garbage) = %d", got)
	}
}
