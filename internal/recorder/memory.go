package recorder

import "fmt"

// Memory is a tree's memory at its highest.
type Memory struct {
	// PeakKiB is the most the tree held at once, in KiB.
	PeakKiB int64
	// Source says what PeakKiB counts. "cgroup v2 memory.peak" or
	// "cgroup v1 memory.max_usage_in_bytes": the kernel's high-water mark
	// of a cgroup that CMD joined before its first instruction, every
	// task of the tree born in it (see treeCgroup for what it charges).
	// "sampled": the resident sets of the tree's live processes, added up
	// every StatInterval, at the highest sum (Estimate).
	Source string
	// Estimate says PeakKiB is sampled: a page two processes share counts
	// once for each, which makes it high; a peak between two samples is
	// missed, which makes it low.
	Estimate bool
}

// Memory sources (Memory.Source).
const (
	MemoryCgroupV2 = "cgroup v2 memory.peak"
	MemoryCgroupV1 = "cgroup v1 memory.max_usage_in_bytes"
	MemorySampled  = "sampled"
)

// treeMemory is how Run learns the tree's memory at its highest: from a
// cgroup of its own where the system lets it make one, else sampled by
// the recorder.
type treeMemory struct {
	cg *treeCgroup
	// why is why the peak is sampled: no cgroup could be made, or CMD
	// could not join it.
	why error
}

func newTreeMemory() *treeMemory {
	cg, err := newTreeCgroup()
	return &treeMemory{cg: cg, why: err}
}

// options are o with what the recording must do for the tree's memory.
func (m *treeMemory) options(o Options) Options {
	if m.cg == nil {
		o.SampleMemory = true
		return o
	}
	o.Held = func(pid int) error {
		m.why = m.cg.join(pid)
		return m.why
	}
	return o
}

// finish sets res.Memory, once the tree is reaped, and removes the
// cgroup; what the record must say of either goes in its problems.
func (m *treeMemory) finish(res *Result) {
	if m.cg != nil && m.cg.joined {
		if kib, source, err := m.cg.peak(); err == nil {
			res.Memory = &Memory{PeakKiB: kib, Source: source}
		}
	}
	if res.Memory == nil && res.Recording != nil && res.Stats.MemorySamples > 0 {
		res.Memory = &Memory{PeakKiB: res.Stats.PeakRSS, Source: MemorySampled, Estimate: true}
		why := "no cgroup for the tree"
		if m.why != nil {
			why = m.why.Error()
		}
		res.Stats.Problems = append(res.Stats.Problems, fmt.Sprintf("the tree's peak memory is an estimate (%s): the resident sets of its processes, added up every %v (%d samples), count a page two processes share once for each and miss a peak between two samples",
			why, StatInterval, res.Stats.MemorySamples))
	}
	if err := m.close(); err != nil {
		res.Stats.Problems = append(res.Stats.Problems, err.Error())
	}
}

// close removes the cgroup, if any: the processes still in it (orphans
// still running) go back to cputime's.
func (m *treeMemory) close() error {
	if m.cg == nil {
		return nil
	}
	cg := m.cg
	m.cg = nil
	if _, err := cg.remove(); err != nil {
		return fmt.Errorf("%w: remove it with rmdir once its processes have exited", err)
	}
	return nil
}
