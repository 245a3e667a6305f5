package procfs

import (
	"bytes"
)

// ParseSchedExecStart returns se.exec_start from a /proc/[pid]/task/[tid]/sched
// file (kernels with CONFIG_SCHED_DEBUG), in nanoseconds: the time on the
// scheduler clock (rq_clock_task of the CPU the thread last ran on) when the
// scheduler last updated the thread's runtime, which for a thread that no
// longer runs is when it last left the CPU. The kernel prints it as
// milliseconds with six decimals ("se.exec_start : 2319397.169141").
// Anything else yields an error wrapping [ErrFileParse].
func ParseSchedExecStart(b []byte) (uint64, error) {
	const key = "se.exec_start"
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		rest, ok := bytes.CutPrefix(line, []byte(key))
		if !ok {
			continue
		}
		rest = bytes.TrimLeft(rest, " \t")
		rest, ok = bytes.CutPrefix(rest, []byte{':'})
		if !ok {
			return 0, parseError("sched", "no ':' after %s", key)
		}
		rest = bytes.TrimSpace(rest)
		ms, frac, found := bytes.Cut(rest, []byte{'.'})
		whole, ok1 := parseUint(ms)
		ns, ok2 := parseUint(frac)
		if !found || !ok1 || !ok2 || len(frac) != 6 || whole > (1<<63)/1_000_000 {
			return 0, parseError("sched", "%s %q", key, clip(rest))
		}
		return whole*1e6 + ns, nil
	}
	return 0, parseError("sched", "no %s line", key)
}
