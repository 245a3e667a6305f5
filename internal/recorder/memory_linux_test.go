package recorder

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cputime/cputime/internal/timeline"
)

const (
	memKids = 3
	memMiB  = 64
	// memSlack is what the tree holds besides its allocations: each Go
	// process's runtime and heap, the parent's too, and the page tables.
	memSlack = (memKids+1)*40<<10 + 16<<10 // KiB
)

// haveTreeCgroup says whether this process can make the tree's cgroup,
// by the file system itself: a directory made and removed in the base
// memoryHierarchy finds.
func haveTreeCgroup(t *testing.T) bool {
	own, err1 := os.ReadFile("/proc/self/cgroup")
	mounts, err2 := os.ReadFile("/proc/self/mountinfo")
	if err1 != nil || err2 != nil {
		return false
	}
	base, _, _, err := memoryHierarchy(string(own), string(mounts), controllersOf)
	if err != nil {
		return false
	}
	probe := filepath.Join(base, "cputime-probe-"+strconv.Itoa(os.Getpid()))
	if os.Mkdir(probe, 0o755) != nil {
		return false
	}
	if err := os.Remove(probe); err != nil {
		t.Fatalf("removing the probe cgroup %s: %v", probe, err)
	}
	return true
}

// memory-tree: three processes holding 64 MiB each at once. With a
// cgroup (root), the peak is the cgroup's, exact and not flagged, every
// child was in it (their own /proc/self/cgroup), and it is gone after;
// without one, it is sampled and flagged. Either way the peak holds the
// three allocations together, which wait4's max RSS (one process's)
// cannot show.
func TestRunTreePeakMemory(t *testing.T) {
	cgroup := haveTreeCgroup(t)
	cmd := helper("memtree:" + strconv.Itoa(memKids) + ":" + strconv.Itoa(memMiB) + ":300")
	var out strings.Builder
	cmd.Stdout = &out
	res, err := Run(context.Background(), cmd, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.ExitCode() != 0 {
		t.Fatalf("helper: %v", res.State)
	}
	if res.Recording == nil {
		t.Skipf("tree not recorded: %v", res.RecordingErr)
	}
	m := res.Memory
	if m == nil {
		t.Fatalf("no peak memory (problems %q)", res.Stats.Problems)
	}
	want := int64(memKids * memMiB << 10)
	if m.PeakKiB < want*9/10 || m.PeakKiB > want+memSlack {
		t.Errorf("peak %d KiB (%s) for %d x %d MiB held together: want %d..%d", m.PeakKiB, m.Source, memKids, memMiB, want*9/10, want+memSlack)
	}
	if res.TreeUsage == nil || res.TreeUsage.MaxRSS >= want {
		t.Fatalf("wait4's max RSS %+v holds the tree: the test shows nothing", res.TreeUsage)
	}
	t.Logf("peak %d KiB from %s; wait4's max RSS %d KiB", m.PeakKiB, m.Source, res.TreeUsage.MaxRSS)
	flagged := strings.Contains(strings.Join(res.Stats.Problems, "|"), "peak memory is an estimate")
	lines := strings.Fields(out.String())
	if len(lines) != memKids {
		t.Fatalf("children's cgroups: %q", out.String())
	}
	if !cgroup {
		if m.Source != MemorySampled || !m.Estimate || !flagged {
			t.Errorf("no cgroup here: source %q, estimate %v, flagged %v; want sampled and flagged", m.Source, m.Estimate, flagged)
		}
		return
	}
	if m.Source != MemoryCgroupV1 && m.Source != MemoryCgroupV2 || m.Estimate || flagged {
		t.Errorf("source %q, estimate %v, flagged %v: want a cgroup's, exact", m.Source, m.Estimate, flagged)
	}
	own, _ := os.ReadFile("/proc/self/cgroup")
	for _, l := range lines {
		path := l[strings.LastIndex(l, ":")+1:]
		if !strings.Contains(filepath.Base(path), "cputime-run-") || strings.Contains(string(own), path+"\n") {
			t.Errorf("a child was in cgroup %q, not the tree's", l)
		}
	}
	if strings.Contains(cgroupDirs(t), "cputime-run-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("the tree's cgroup is left behind: %s", cgroupDirs(t))
	}
}

// cgroupDirs lists the cgroups beside and under this process's, in every
// memory hierarchy, read straight from the file system.
func cgroupDirs(t *testing.T) string {
	own, _ := os.ReadFile("/proc/self/cgroup")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	base, home, _, err := memoryHierarchy(string(own), string(mounts), controllersOf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range []string{base, home} {
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			names = append(names, e.Name())
		}
	}
	return strings.Join(names, " ")
}

// A tree whose orphan outlives CMD: the cgroup still goes, the orphan
// moved back to this process's cgroup, where it keeps running.
func TestRunCgroupRemovedWithOrphan(t *testing.T) {
	if !haveTreeCgroup(t) {
		t.Skip("no cgroup can be made here (root, or a delegated subtree)")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!")
	var out strings.Builder
	cmd.Stdout = &out
	res, err := Run(context.Background(), cmd, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("orphan's pid: %q", out.String())
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if res.Recording == nil {
		t.Skipf("tree not recorded: %v", res.RecordingErr)
	}
	if res.Memory == nil || res.Memory.Estimate {
		t.Errorf("memory %+v: want the cgroup's", res.Memory)
	}
	for _, p := range res.Stats.Problems {
		if strings.Contains(p, "cgroup") {
			t.Errorf("problem: %s", p)
		}
	}
	if strings.Contains(cgroupDirs(t), "cputime-run-"+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("the tree's cgroup is left behind: %s", cgroupDirs(t))
	}
	theirs, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatalf("the orphan is gone: %v", err)
	}
	if strings.Contains(string(theirs), "cputime-run-") {
		t.Errorf("the orphan is still in the tree's cgroup: %s", theirs)
	}
}

// Where the cgroup cannot be joined (Held fails), the recorder samples
// the tree's memory: the sum holds the three allocations.
func TestStartSamplesMemoryWhenHeldFails(t *testing.T) {
	cmd := helper("memtree:" + strconv.Itoa(memKids) + ":" + strconv.Itoa(memMiB) + ":300")
	cmd.Stdout = new(strings.Builder)
	held := 0
	r, err := Start(cmd, Options{Held: func(pid int) error { held = pid; return errors.New("refused") }})
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("recording not possible here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	exitedNotReaped(t, cmd.Process.Pid)
	_, st, err := r.Stop()
	cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if held != cmd.Process.Pid {
		t.Errorf("Held called with %d, CMD is %d", held, cmd.Process.Pid)
	}
	want := int64(memKids * memMiB << 10)
	if st.MemorySamples == 0 || st.PeakRSS < want*9/10 || st.PeakRSS > want+memSlack {
		t.Errorf("sampled peak %d KiB in %d samples: want %d..%d", st.PeakRSS, st.MemorySamples, want*9/10, want+memSlack)
	}
}

// A sampled peak is flagged in the record's problems; one from the
// cgroup, or none at all, adds nothing.
func TestTreeMemoryFlagsSampled(t *testing.T) {
	res := &Result{Recording: &timeline.Recording{}, Stats: Stats{PeakRSS: 5000, MemorySamples: 4}}
	(&treeMemory{}).finish(res)
	if m := res.Memory; m == nil || m.PeakKiB != 5000 || m.Source != MemorySampled || !m.Estimate {
		t.Errorf("memory %+v: want 5000 KiB sampled, an estimate", m)
	}
	if len(res.Stats.Problems) != 1 || !strings.Contains(res.Stats.Problems[0], "estimate") || res.Stats.Complete() {
		t.Errorf("problems %q: want the estimate named", res.Stats.Problems)
	}
	none := &Result{Recording: &timeline.Recording{}}
	(&treeMemory{}).finish(none)
	if none.Memory != nil || len(none.Stats.Problems) != 0 {
		t.Errorf("no samples: memory %+v, problems %q", none.Memory, none.Stats.Problems)
	}
}

func TestMemoryHierarchy(t *testing.T) {
	const (
		v1Mounts = "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
			"31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
			"32 25 0:28 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
		v1Own    = "4:memory:/jobs/a\n1:cpu:/\n0::/\n"
		v2Mounts = "32 25 0:28 / /sys/fs/cgroup rw,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
		v2Own    = "0::/user.slice/session-1.scope\n"
		v2Root   = "0::/\n"
	)
	ctl := func(avail map[string]string) func(dir, name string) []string {
		return func(dir, name string) []string { return strings.Fields(avail[dir+" "+name]) }
	}
	for _, c := range []struct {
		name, own, mounts string
		avail             map[string]string
		base, home        string
		v2                bool
	}{
		{"v1 memory, empty unified", v1Own, v1Mounts, nil, "/sys/fs/cgroup/memory/jobs/a", "/sys/fs/cgroup/memory/jobs/a", false},
		// Never beside cputime's cgroup: out of its limits.
		{"v2 nested, memory from the parent", v2Own, v2Mounts, map[string]string{"/sys/fs/cgroup/user.slice/session-1.scope cgroup.controllers": "cpu memory pids"},
			"", "", false},
		{"v2 nested, memory handed down", v2Own, v2Mounts, map[string]string{"/sys/fs/cgroup/user.slice/session-1.scope cgroup.subtree_control": "memory"},
			"/sys/fs/cgroup/user.slice/session-1.scope", "/sys/fs/cgroup/user.slice/session-1.scope", true},
		{"v2 memory handed down, v1 too", v2Own, v2Mounts + v1Mounts, map[string]string{"/sys/fs/cgroup/user.slice/session-1.scope cgroup.subtree_control": "memory"},
			"/sys/fs/cgroup/user.slice/session-1.scope", "/sys/fs/cgroup/user.slice/session-1.scope", true},
		{"v2 root: under", v2Root, v2Mounts, map[string]string{"/sys/fs/cgroup cgroup.subtree_control": "cpu memory"}, "/sys/fs/cgroup", "/sys/fs/cgroup", true},
		{"v2 without memory, no v1", v2Own, v2Mounts, map[string]string{"/sys/fs/cgroup/user.slice/session-1.scope cgroup.controllers": "cpu pids"}, "", "", false},
		{"v2 root without memory handed down", v2Root, v2Mounts, map[string]string{"/sys/fs/cgroup cgroup.controllers": "memory"}, "", "", false},
		{"mount of another root", "4:memory:/other/x\n", "30 25 0:26 /jobs /mnt/mem rw - cgroup cgroup rw,memory\n", nil, "", "", false},
		{"escaped mount point", "4:memory:/a\n", `30 25 0:26 / /sys/fs/my\040cg rw - cgroup cgroup rw,memory` + "\n", nil, "/sys/fs/my cg/a", "/sys/fs/my cg/a", false},
	} {
		base, home, v2, err := memoryHierarchy(c.own, c.mounts, ctl(c.avail))
		if base != c.base || home != c.home || v2 != c.v2 || (err == nil) != (c.base != "") {
			t.Errorf("%s: %q, %q, v2 %v, %v; want %q, %q, v2 %v", c.name, base, home, v2, err, c.base, c.home, c.v2)
		}
	}
}
