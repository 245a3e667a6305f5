package exporter

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A cgroup named with invalid UTF-8, control characters and a bidi
// override (anyone with a delegated subtree can name one so), and two
// whose names read alike once made printable: every cgroup of the tree
// (the directories the test made) is exported under a printable name,
// the two alike apart, with the health metrics, and nothing is an error.
func TestCgroupCollectorHostileNames(t *testing.T) {
	root := t.TempDir()
	names := []string{"plain", "bad\xff\tname\u202e", "bad\xfe\tname\u202e", "bad\xff\tname\u202e/child\x1b[2J"}
	stat := "usage_usec 3000\nuser_usec 2000\nsystem_usec 1000\n"
	for _, dir := range append([]string{""}, names...) {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		if err := os.WriteFile(filepath.Join(root, dir, "cpu.stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCgroupCollector(root)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]bool{}
	health := 0
	for _, mf := range mfs {
		switch mf.GetName() {
		case "cputime_cgroup_cpu_seconds_total":
			for _, m := range mf.Metric {
				for _, l := range m.Label {
					if l.GetName() == "cgroup" {
						got[l.GetValue()] = true
					}
				}
			}
		case "cputime_scrape_duration_seconds", "cputime_read_errors_total", "cputime_collect_errors_total":
			health++
		}
	}
	want := []string{"/", "/plain", "/bad??name?", "/bad??name?~2", "/bad??name?/child?[2J"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no cgroup %q among %q", w, slices.Sorted(maps.Keys(got)))
		}
	}
	if len(got) != len(want) || health != 3 {
		t.Errorf("%d cgroups (want %d: the tree's directories) and %d health metrics (want 3)", len(got), len(want), health)
	}
}
