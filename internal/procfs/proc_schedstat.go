package procfs

import (
	"bytes"
	"fmt"
	"strconv"
)

// Schedstat holds /proc/[pid]/task/[tid]/schedstat: the scheduler's own
// accounting of one thread, at nanosecond resolution rather than in ticks.
// Kernels built without CONFIG_SCHED_INFO have no schedstat file.
type Schedstat struct {
	// RunTime is the time spent on a CPU, in nanoseconds
	// (se.sum_exec_runtime, updated at scheduler events and ticks).
	RunTime uint64
	// WaitTime is the time spent runnable but waiting for a CPU, in
	// nanoseconds.
	WaitTime uint64
	// Timeslices is the number of times the thread was scheduled in.
	Timeslices uint64
}

// ParseSchedstat parses a schedstat file without allocating: three unsigned
// decimals separated by single spaces, then an optional newline, exactly as
// the kernel prints them ("%llu %llu %lu\n"). Anything else yields an error
// wrapping [ErrFileParse].
func ParseSchedstat(b []byte) (Schedstat, error) {
	line, ok := bytes.CutSuffix(b, []byte{'\n'})
	_ = ok // the newline is optional
	var v [3]uint64
	for i := range v {
		tok := line
		if i < len(v)-1 {
			sp := bytes.IndexByte(line, ' ')
			if sp < 0 {
				return Schedstat{}, parseError("schedstat", "%d fields, want 3", i+1)
			}
			tok, line = line[:sp], line[sp+1:]
		}
		if v[i], ok = parseUint(tok); !ok {
			return Schedstat{}, parseError("schedstat", "field %d %q is not an unsigned integer", i+1, clip(tok))
		}
	}
	return Schedstat{RunTime: v[0], WaitTime: v[1], Timeslices: v[2]}, nil
}

// ReadTaskSchedstat reads and parses /proc/[pid]/task/[tid]/schedstat.
func (fs FS) ReadTaskSchedstat(pid, tid int) (Schedstat, error) {
	if err := checkID("process", pid); err != nil {
		return Schedstat{}, fmt.Errorf("reading thread schedstat: %w", err)
	}
	if err := checkID("thread", tid); err != nil {
		return Schedstat{}, fmt.Errorf("reading thread schedstat: %w", err)
	}
	path := fs.Path(strconv.Itoa(pid), "task", strconv.Itoa(tid), "schedstat")
	var buf [128]byte
	b, err := ReadFileInto(path, buf[:0])
	if err == nil {
		var s Schedstat
		if s, err = ParseSchedstat(b); err == nil {
			return s, nil
		}
		err = fmt.Errorf("parsing %s: %w", path, err)
	}
	return Schedstat{}, fmt.Errorf("reading schedstat of thread %d of process %d: %w", tid, pid, err)
}
