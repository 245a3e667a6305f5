package exporter

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cputime/cputime"
)

// readCgroup reads /proc/PID/cgroup.
func readCgroup(pid int) Cgroup {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return Cgroup{}
	}
	return ParseCgroup(string(b))
}

// UnifiedMount returns where the cgroup v2 (unified) hierarchy is mounted,
// from /proc/self/mountinfo.
func UnifiedMount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS
		l := sc.Text()
		pre, post, ok := strings.Cut(l, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			return f[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no cgroup2 (unified) hierarchy mounted: %w", cputime.ErrNotSupported)
}

// CgroupCollector exports the CPU time of every cgroup of the unified
// hierarchy from the kernel's own accounting (cpu.stat): one read per
// cgroup per scrape, whatever the number of tasks, and the time of tasks
// that exited stays in their cgroups' counters. For hosts with tens of
// thousands of tasks, instead of series per process.
type CgroupCollector struct {
	root string
	mu   sync.Mutex
	ids  map[string]Cgroup // label values, by path
	errs uint64
	cerr collectErrors
}

// NewCgroupCollector returns a collector of the cgroups under root, the
// unified hierarchy's mount point ("" finds it).
func NewCgroupCollector(root string) (*CgroupCollector, error) {
	if root == "" {
		var err error
		if root, err = UnifiedMount(); err != nil {
			return nil, fmt.Errorf("exporter: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "cpu.stat")); err != nil {
		return nil, fmt.Errorf("exporter: %s is not a cgroup v2 hierarchy: %w", root, err)
	}
	return &CgroupCollector{root: root, ids: make(map[string]Cgroup), cerr: collectErrors{}}, nil
}

// Describe sends the collector's descriptors.
func (c *CgroupCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCgroupCPU
	ch <- descReadErrors
	ch <- descDuration
	ch <- descCollectErrors
}

// Collect reads every cgroup's cpu.stat. A cgroup is named by its path
// made a label value (LabelValue: anyone with a delegated subtree can
// name one with invalid UTF-8 or control characters); two paths that
// read alike then get "~2", "~3" appended in the order of the walk. A
// directory that cannot be listed is counted and its descendants left
// out; the walk goes on.
func (c *CgroupCollector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]bool, len(c.ids))
	labels := make(map[string]bool, len(c.ids))
	err := filepath.WalkDir(c.root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a cgroup removed during the walk
			}
			if dir == c.root {
				return err
			}
			c.cerr.add(ch, descCgroupCPU, reasonWalk, fmt.Errorf("walking %s: %w", LabelValue(dir), err))
			return nil // its descendants are left out, the rest walked
		}
		if !d.IsDir() {
			return nil
		}
		user, system, err := readCPUStat(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.errs++
			}
			return nil
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(dir, c.root), "/")
		cg, ok := c.ids[rel]
		if !ok {
			cg = cgroupAt(rel)
			cg.Path, cg.Unit = LabelValue(cg.Path), LabelValue(cg.Unit)
			c.ids[rel] = cg
		}
		seen[rel] = true
		label := cg.Path
		for n := 2; labels[label]; n++ {
			label = cg.Path + "~" + strconv.Itoa(n)
		}
		labels[label] = true
		c.cerr.send(ch, descCgroupCPU, prometheus.CounterValue, user.Seconds(), label, cg.ContainerID, cg.Unit, "user")
		c.cerr.send(ch, descCgroupCPU, prometheus.CounterValue, system.Seconds(), label, cg.ContainerID, cg.Unit, "system")
		return nil
	})
	if err != nil {
		c.cerr.add(ch, descCgroupCPU, reasonWalk, fmt.Errorf("walking %s: %w", c.root, err))
	}
	for p := range c.ids {
		if !seen[p] {
			delete(c.ids, p)
		}
	}
	c.cerr.send(ch, descReadErrors, prometheus.CounterValue, float64(c.errs))
	c.cerr.export(ch, reasonWalk, reasonMetric)
	c.cerr.send(ch, descDuration, prometheus.GaugeValue, time.Since(start).Seconds())
}

// readCPUStat reads user_usec and system_usec of a cgroup's cpu.stat: the
// kernel splits the exact usage_usec between them (cputime_adjust), so
// they add up to it.
func readCPUStat(path string) (user, system time.Duration, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	return parseCPUStat(string(b), path)
}
