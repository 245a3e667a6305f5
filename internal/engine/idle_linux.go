package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// sysCPU is where the kernel describes the CPUs (tests give newIdleLayout
// a fixture tree).
const sysCPU = "/sys/devices/system/cpu"

// idleLayout is what the idle times are read from, per CPU, decided once
// per process so that each CPU keeps one source and its values never go
// back: /proc/stat refined between its ticks by the residency files of the
// CPU's cpuidle states, or /proc/stat alone.
type idleLayout struct {
	// states[cpu] holds the paths of the time files of the CPU's cpuidle
	// states; nil means the CPU is read from /proc/stat alone.
	states [][][]byte

	// mu serializes reads, which share the buffers below.
	mu       sync.Mutex
	cpu      []idleCPU
	statFS   procfs.FS
	statPath []byte           // /proc/stat in statFS
	buf      []byte           // its content
	stat     []procfs.CPUStat // its CPU lines
}

// idleCPU is what one process remembers of one CPU between reads.
type idleCPU struct {
	// last is the last value reported, so that none ever goes back.
	last uint64
	// gap is the smallest difference yet seen between /proc/stat's idle
	// and the cpuidle residency, in ns (either may be the larger: they
	// drift apart by up to about 0.1 % of uptime).
	gap     int64
	haveGap bool
}

// tickNanos is one USER_HZ tick, the resolution of /proc/stat (USER_HZ is
// 100 on every architecture Go supports).
const tickNanos = 10_000_000

var idleSources = sync.OnceValues(func() (*idleLayout, error) { return newIdleLayout(sysCPU) })

// newIdleLayout lists the present CPUs and their cpuidle states. cpuidle
// counts only where a driver is registered ("none" otherwise, and with
// idle=poll or idle=halt): without one, the idle loop enters no state and
// the files, if any, stay at zero.
func newIdleLayout(root string) (*idleLayout, error) {
	present, err := os.ReadFile(filepath.Join(root, "present"))
	if err != nil {
		return nil, fmt.Errorf("listing CPUs: %w", err)
	}
	n, err := cpuCount(strings.TrimSpace(string(present)))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(root, "present"), err)
	}
	l := &idleLayout{states: make([][][]byte, n), cpu: make([]idleCPU, n)}
	driver, err := os.ReadFile(filepath.Join(root, "cpuidle", "current_driver"))
	useCPUIdle := err == nil && strings.TrimSpace(string(driver)) != "none"
	for cpu := range n {
		if useCPUIdle {
			dir := filepath.Join(root, "cpu"+strconv.Itoa(cpu), "cpuidle")
			names, _ := filepath.Glob(filepath.Join(dir, "state[0-9]*"))
			for _, s := range names {
				l.states[cpu] = append(l.states[cpu], []byte(filepath.Join(s, "time")))
			}
		}
	}
	return l, nil
}

// cpuCount returns 1 + the highest CPU in a kernel CPU list ("0-3,8,10-11").
func cpuCount(list string) (int, error) {
	cpus, err := procfs.ParseCPUList(list)
	if err != nil {
		return 0, err
	}
	return slices.Max(cpus) + 1, nil
}

// appendIdleNanos appends each present CPU's idle time since boot, in
// nanoseconds, to dst.
func (eng *Engine) AppendIdleNanos(dst []uint64) ([]uint64, error) {
	l, err := idleSources()
	if err != nil {
		return dst, err
	}
	return l.appendNanos(dst, eng.proc)
}

func (l *idleLayout) appendNanos(dst []uint64, proc procfs.FS) ([]uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// /proc/stat first: a residency read after it is at least as recent,
	// so a CPU that woke in between shows no more sleep than it had.
	stat, err := l.readStat(proc)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst, err = l.readResidency(dst)
	if err != nil {
		return dst[:start], err
	}
	next := 0 // index into stat.CPUs, which is sorted by CPU
	for cpu := range dst[start:] {
		for next < len(stat.CPUs) && stat.CPUs[next].CPU < cpu {
			next++
		}
		var s uint64 // 0: not listed, the CPU is offline
		if next < len(stat.CPUs) && stat.CPUs[next].CPU == cpu {
			c := stat.CPUs[next]
			s = ticksToNanos(c.Idle + c.IOWait)
		}
		v := &dst[start+cpu]
		*v = l.cpu[cpu].merge(l.states[cpu] != nil, *v, s)
	}
	return dst, nil
}

// readStat reads /proc/stat into the layout's buffers, growing them as
// needed; it allocates nothing once they have grown.
func (l *idleLayout) readStat(proc procfs.FS) (procfs.SysStat, error) {
	if l.statPath == nil || l.statFS != proc {
		l.statPath, l.statFS = []byte(proc.Path("stat")), proc
	}
	path := l.statPath
	if len(l.buf) == 0 {
		l.buf = make([]byte, 4096)
	}
	for {
		n, err := procfs.ReadFileAt(unix.AT_FDCWD, path, l.buf)
		if errors.Is(err, io.ErrShortBuffer) && len(l.buf) < 64<<20 {
			l.buf = make([]byte, 2*len(l.buf))
			continue
		}
		if err != nil {
			return procfs.SysStat{}, fmt.Errorf("reading %s: %w", path, err)
		}
		stat, err := procfs.ParseSysStatInto(l.buf[:n], l.stat)
		if err != nil {
			return procfs.SysStat{}, fmt.Errorf("parsing %s: %w", path, err)
		}
		l.stat = stat.CPUs
		return stat, nil
	}
}

// merge returns the value to report for a CPU given its cpuidle residency
// r (haveStates; 0 if its states have vanished) and /proc/stat's idle s (0
// if the CPU is not listed: it is offline), and remembers what the next
// read needs.
//
// /proc/stat is the kernel's idle accounting, complete to the moment of
// the read, sleep in progress included, but truncated to the tick. The
// residency is exact to the microsecond, but only up to the CPU's last
// wake-up: a CPU of an idle machine can sleep for seconds without it
// moving. Neither alone will do. The residency's growth is carried onto
// /proc/stat's scale by the smallest difference m = min(s − r) seen so far
// (a read when the CPU was awake, up to a tick of truncation), and the
// result is held between s − one tick and s: with the CPU awake it is
// r + m, moving by microseconds; while it sleeps, r stands still and
// s − tick takes over, until r catches up at the wake-up. Since m ≤ s − r
// at every read, r + m never passes s, so nothing is counted twice.
func (c *idleCPU) merge(haveStates bool, r, s uint64) uint64 {
	v := c.last
	switch {
	case s == 0:
		// Offline: its idle time does not grow; the last value stands.
	case !haveStates || r == 0:
		v = max(v, s)
	default:
		gap := int64(s - r) // two's complement: s < r gives a negative gap
		if !c.haveGap || gap < c.gap {
			c.gap, c.haveGap = gap, true
		}
		v = max(v, r+uint64(c.gap), s-min(s, tickNanos))
	}
	c.last = v
	return v
}

// readResidency appends each CPU's cpuidle residency in nanoseconds, summed
// over its states, to dst: 0 for a CPU read from /proc/stat alone, or whose
// states have vanished.
func (l *idleLayout) readResidency(dst []uint64) ([]uint64, error) {
	var buf [32]byte
	for _, files := range l.states {
		var ns uint64
		for _, path := range files {
			n, err := procfs.ReadFileAt(unix.AT_FDCWD, path, buf[:])
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
				ns = 0 // the CPU went offline and its driver removed its states: its last value stands
				break
			}
			if err != nil {
				return dst, fmt.Errorf("reading %s: %w", path, err)
			}
			us, ok := parseDecimal(bytes.TrimSpace(buf[:n]))
			if !ok {
				return dst, fmt.Errorf("%s: %q: %w", path, string(buf[:n]), procfs.ErrFileParse)
			}
			ns += us * 1000
		}
		dst = append(dst, ns)
	}
	return dst, nil
}

// parseDecimal parses an unsigned decimal integer that fits in 64 bits.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
