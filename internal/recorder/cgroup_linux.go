package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// treeCgroup is a memory cgroup made for CMD's tree: CMD's process joins
// it while the launcher holds it (before CMD's first instruction), every
// task it creates is born in it, and the kernel keeps the cgroup's
// memory at its highest. Where the memory controller is in the unified
// hierarchy (v2) it is the cgroup's memory.peak; in a v1 memory hierarchy,
// memory.max_usage_in_bytes. Either counts what the kernel charges to the
// cgroup: the tree's anonymous memory, the page cache it brought in (files
// it read or wrote that were not cached already; a page cached before
// belongs to whoever brought it in), and, v2 and v1 alike on current
// kernels, the kernel memory its tasks allocated (page tables, slabs). The
// launcher's own few pages stay with cputime's cgroup.
//
// The cgroup is made under cputime's own, where the file system lets it
// (root, or a delegated subtree), so that the tree stays within every
// limit it would have had without it. In v2 that takes cputime's cgroup
// handing the memory controller down (cgroup.subtree_control), which the
// no-internal-process rule allows a cgroup with processes in it only at
// the hierarchy's root (a container's, with its own cgroup namespace);
// a cgroup beside cputime's would take the tree out of the limits of
// cputime's, and a systemd scope is systemd's to make.
type treeCgroup struct {
	dir    string // the cgroup's directory
	home   string // cputime's own cgroup's, where what is left goes at the end
	v2     bool
	joined bool
}

// cgroupSeq tells apart the cgroups of one process's runs.
var cgroupSeq atomic.Uint64

// newTreeCgroup makes the tree's cgroup, or says why it cannot.
func newTreeCgroup() (*treeCgroup, error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	base, home, v2, err := memoryHierarchy(string(own), string(mounts), controllersOf)
	if err != nil {
		return nil, err
	}
	for range 8 { // a name left by a cputime that was killed: the next one
		dir := filepath.Join(base, fmt.Sprintf("cputime-run-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		err = os.Mkdir(dir, 0o755)
		if err == nil {
			return &treeCgroup{dir: dir, home: home, v2: v2}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return nil, fmt.Errorf("making a cgroup for the tree: %w", err)
}

// controllersOf reads a cgroup v2 directory's list of controllers (name:
// cgroup.controllers or cgroup.subtree_control).
func controllersOf(dir, name string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return strings.Fields(string(b))
}

// memoryHierarchy finds, from the texts of /proc/self/cgroup and
// /proc/self/mountinfo, the directory to make the tree's cgroup in and
// cputime's own cgroup's (the same directory): in the unified hierarchy
// where cputime's cgroup hands the memory controller down, else in a v1
// memory hierarchy.
func memoryHierarchy(own, mountinfo string, controllers func(dir, name string) []string) (base, home string, v2 bool, err error) {
	var unified, memV1 string // cputime's cgroup paths
	for _, l := range strings.Split(own, "\n") {
		// ID:CONTROLLERS:PATH
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			unified = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			memV1 = f[2]
		}
	}
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	var v2Mount, v2Root, v1Mount, v1Root string
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mount := unescapeMount(f[3]), unescapeMount(f[4])
		switch {
		case g[0] == "cgroup2" && v2Mount == "":
			v2Mount, v2Root = mount, root
		case g[0] == "cgroup" && v1Mount == "" && slices.Contains(strings.Split(g[2], ","), "memory"):
			v1Mount, v1Root = mount, root
		}
	}
	// within is the directory of cgroup path p in a mount of root r.
	within := func(mount, r, p string) (string, bool) {
		rel, ok := strings.CutPrefix(p, r)
		if !ok || r != "/" && rel != "" && rel[0] != '/' {
			return "", false
		}
		return filepath.Join(mount, rel), true
	}
	if v2Mount != "" && unified != "" {
		if dir, ok := within(v2Mount, v2Root, unified); ok && slices.Contains(controllers(dir, "cgroup.subtree_control"), "memory") {
			return dir, dir, true, nil
		}
	}
	if v1Mount != "" && memV1 != "" {
		if dir, ok := within(v1Mount, v1Root, memV1); ok {
			return dir, dir, false, nil
		}
	}
	return "", "", false, errors.New("no memory controller in a cgroup hierarchy this process can see")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// join moves process pid into the cgroup.
func (c *treeCgroup) join(pid int) error {
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("moving process %d into cgroup %s: %w", pid, c.dir, err)
	}
	c.joined = true
	return nil
}

// peak is the cgroup's memory at its highest, in KiB, and where it comes
// from.
func (c *treeCgroup) peak() (int64, string, error) {
	name, source := "memory.max_usage_in_bytes", "cgroup v1 memory.max_usage_in_bytes"
	if c.v2 {
		name, source = "memory.peak", "cgroup v2 memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		return 0, source, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, source, fmt.Errorf("reading %s: %q is not a size", filepath.Join(c.dir, name), b)
	}
	return n / 1024, source, nil
}

// remove removes the cgroup. Processes of the tree still in it (orphans
// still running) are moved to cputime's own cgroup first, where they would
// have run without it; it returns how many, and why the cgroup could not
// be removed, if it could not.
func (c *treeCgroup) remove() (int, error) {
	moved := 0
	// Each pass moves the processes listed; one that forked meanwhile
	// leaves its child for the next.
	for range 16 {
		err := unix.Rmdir(c.dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return moved, nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return moved, fmt.Errorf("removing cgroup %s: %w", c.dir, err)
		}
		b, rerr := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		if rerr != nil {
			return moved, fmt.Errorf("removing cgroup %s: %w", c.dir, err)
		}
		pids := strings.Fields(string(b))
		for _, p := range pids {
			if os.WriteFile(filepath.Join(c.home, "cgroup.procs"), []byte(p), 0) == nil {
				moved++
			}
		}
		if len(pids) == 0 {
			// Empty, yet busy: the last tasks' exits are not through yet.
			unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
		}
	}
	return moved, fmt.Errorf("removing cgroup %s: %w (processes keep joining it)", c.dir, unix.EBUSY)
}
