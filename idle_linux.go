package cputime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// sysCPU is where the kernel describes the CPUs (a variable: tests point it
// at a fixture tree).
var sysCPU = "/sys/devices/system/cpu"

// idleLayout is what the idle times are read from, per CPU, decided once
// per process so that each CPU keeps one source and its values never go
// back: the residency files of its cpuidle states, or /proc/stat.
type idleLayout struct {
	// states[cpu] holds the paths of the time files of the CPU's cpuidle
	// states; nil means the CPU is read from /proc/stat.
	states [][][]byte
	// anyStat: some CPU is read from /proc/stat.
	anyStat bool
	// last holds the last value reported for each CPU, so that none ever
	// goes back, even when an offline CPU's driver removes its states.
	mu   sync.Mutex
	last []uint64
}

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
	l := &idleLayout{states: make([][][]byte, n), last: make([]uint64, n)}
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
		if l.states[cpu] == nil {
			l.anyStat = true
		}
	}
	return l, nil
}

// cpuCount returns 1 + the highest CPU in a kernel CPU list ("0-3,8,10-11").
func cpuCount(list string) (int, error) {
	highest := -1
	for r := range strings.SplitSeq(list, ",") {
		_, hi, _ := strings.Cut(r, "-")
		if hi == "" {
			hi = r
		}
		n, err := strconv.Atoi(hi)
		if err != nil || n < 0 || n >= 1<<16 {
			return 0, fmt.Errorf("CPU list %q: %w", list, procfs.ErrFileParse)
		}
		highest = max(highest, n)
	}
	if highest < 0 {
		return 0, fmt.Errorf("empty CPU list: %w", procfs.ErrFileParse)
	}
	return highest + 1, nil
}

// appendIdleNanos appends each present CPU's idle time since boot, in
// nanoseconds, to dst.
func appendIdleNanos(dst []uint64) ([]uint64, error) {
	l, err := idleSources()
	if err != nil {
		return dst, err
	}
	return l.appendNanos(dst, procFS)
}

func (l *idleLayout) appendNanos(dst []uint64, proc procfs.FS) ([]uint64, error) {
	start := len(dst)
	dst, err := l.readNanos(dst, proc)
	if err != nil {
		return dst[:start], err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for cpu := range dst[start:] {
		v := &dst[start+cpu]
		*v = max(*v, l.last[cpu])
		l.last[cpu] = *v
	}
	return dst, nil
}

func (l *idleLayout) readNanos(dst []uint64, proc procfs.FS) ([]uint64, error) {
	var stat procfs.SysStat
	if l.anyStat {
		var err error
		if stat, err = proc.ReadSysStat(); err != nil {
			return dst, err
		}
	}
	next := 0 // index into stat.CPUs, which is sorted by CPU
	var buf [32]byte
	for cpu, files := range l.states {
		var ns uint64
		if files == nil {
			for next < len(stat.CPUs) && stat.CPUs[next].CPU < cpu {
				next++
			}
			if next < len(stat.CPUs) && stat.CPUs[next].CPU == cpu {
				c := stat.CPUs[next]
				ns = ticksToNanos(c.Idle + c.IOWait)
			}
			dst = append(dst, ns)
			continue
		}
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
