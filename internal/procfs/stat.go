package procfs

import (
	"bytes"
	"fmt"
)

// CPUStat is one cpu line of /proc/stat: the time all CPUs (CPU -1) or one
// CPU spent in each mode since boot, in USER_HZ clock ticks.
type CPUStat struct {
	// CPU is the CPU number, or -1 for the aggregate "cpu" line.
	CPU int
	// User includes guest time; Nice includes guest_nice time.
	User, Nice, System, Idle uint64
	// IOWait (since Linux 2.5.41), IRQ and SoftIRQ (2.6.0) and Steal
	// (2.6.11) are zero on kernels too old to print them.
	IOWait, IRQ, SoftIRQ, Steal uint64
}

// SysStat holds the parts of /proc/stat that cputime needs.
type SysStat struct {
	// Total is the aggregate "cpu" line; its CPU is -1.
	Total CPUStat
	// CPUs holds the "cpuN" lines in the order the kernel prints them,
	// ascending by number. Offline CPUs have no line, so CPUs[i].CPU need
	// not be i.
	CPUs []CPUStat
	// BootTime is the boot time (btime), in seconds since the Unix epoch:
	// the wall clock now minus CLOCK_BOOTTIME, so it moves when the wall
	// clock is set.
	BootTime uint64
}

// cpuColumns is the number of columns of a cpu line that CPUStat keeps;
// later ones (guest, guest_nice, future ones) are checked but dropped.
const cpuColumns = 8

// ParseSysStat parses /proc/stat. The aggregate "cpu" line and "btime" are
// required; a cpu line needs at least the four columns of Linux 2.4 (user,
// nice, system, idle). Lines other than cpu and btime are ignored.
// Malformed input yields an error wrapping [ErrFileParse].
func ParseSysStat(b []byte) (SysStat, error) {
	return ParseSysStatInto(b, nil)
}

// ParseSysStatInto is ParseSysStat appending the per-CPU lines to
// cpus[:0], for a caller that parses /proc/stat repeatedly with one slice.
func ParseSysStatInto(b []byte, cpus []CPUStat) (SysStat, error) {
	var (
		s                   = SysStat{CPUs: cpus[:0]}
		haveTotal, haveBoot bool
	)
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		key, rest := nextField(line)
		switch {
		case string(key) == "btime":
			if haveBoot {
				return SysStat{}, parseError("/proc/stat", "second btime line")
			}
			tok, after := nextField(rest)
			var ok bool
			if s.BootTime, ok = parseUint(tok); !ok {
				return SysStat{}, parseError("/proc/stat", "btime %q", clip(tok))
			}
			if extra, _ := nextField(after); extra != nil {
				return SysStat{}, parseError("/proc/stat", "btime line has more than one value")
			}
			haveBoot = true
		case bytes.HasPrefix(key, []byte("cpu")):
			c, err := parseCPULine(key, rest)
			if err != nil {
				return SysStat{}, err
			}
			if c.CPU < 0 {
				if haveTotal {
					return SysStat{}, parseError("/proc/stat", "second cpu line")
				}
				s.Total, haveTotal = c, true
				continue
			}
			if n := len(s.CPUs); n > 0 && c.CPU <= s.CPUs[n-1].CPU {
				return SysStat{}, parseError("/proc/stat", "cpu%d after cpu%d", c.CPU, s.CPUs[n-1].CPU)
			}
			s.CPUs = append(s.CPUs, c)
		}
	}
	if !haveTotal {
		return SysStat{}, parseError("/proc/stat", "no cpu line")
	}
	if !haveBoot {
		return SysStat{}, parseError("/proc/stat", "no btime line")
	}
	return s, nil
}

func parseCPULine(key, rest []byte) (CPUStat, error) {
	c := CPUStat{CPU: -1}
	if num := key[len("cpu"):]; len(num) > 0 {
		n, ok := parseSmall(num)
		if !ok {
			return CPUStat{}, parseError("/proc/stat", "cpu line %q", clip(key))
		}
		c.CPU = n
	}
	var cols [cpuColumns]uint64
	n := 0
	for {
		tok, after := nextField(rest)
		if tok == nil {
			break
		}
		rest = after
		v, ok := parseUint(tok)
		if !ok {
			return CPUStat{}, parseError("/proc/stat", "%s column %d %q", key, n+1, clip(tok))
		}
		if n < len(cols) {
			cols[n] = v
		}
		n++
	}
	if n < 4 {
		return CPUStat{}, parseError("/proc/stat", "%s has %d columns, want at least 4", key, n)
	}
	c.User, c.Nice, c.System, c.Idle = cols[0], cols[1], cols[2], cols[3]
	c.IOWait, c.IRQ, c.SoftIRQ, c.Steal = cols[4], cols[5], cols[6], cols[7]
	return c, nil
}

// ReadSysStat reads and parses /proc/stat.
func (fs FS) ReadSysStat() (SysStat, error) {
	path := fs.Path("stat")
	b, err := ReadFileInto(path, make([]byte, 0, sysStatBufSize))
	if err == nil {
		var s SysStat
		if s, err = ParseSysStat(b); err == nil {
			return s, nil
		}
		err = fmt.Errorf("parsing %s: %w", path, err)
	}
	return SysStat{}, fmt.Errorf("reading system stat: %w", err)
}
