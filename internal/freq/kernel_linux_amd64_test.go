package freq

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelSources are the sources that read the kernel's own figure, each
// tried directly (not through Reference, which stops at the first).
var kernelSources = []struct {
	name string
	read func() (uint64, bool)
	why  string // why it may be unavailable
}{
	{"kvmclock", kvmClockHz, "not a KVM guest with a stable kvm-clock, or the kernel does not map its page"},
	{"perfmmap", perfMmapHz, "perf_event_open refused (perf_event_paranoid > 2, seccomp) or the kernel's sched_clock is not the TSC (cap_user_time 0, as under KVM's paravirtual sched_clock)"},
}

// Each kernel source agrees with a calibration against CLOCK_MONOTONIC_RAW
// within 1e-5: an independent measurement (the TSC read around clock
// reads over 40 ms), not a reading of the same page.
func TestKernelSourcesAgainstCalibration(t *testing.T) {
	cal, err := calibrateTSC()
	if err != nil {
		t.Fatalf("calibration: %v", err)
	}
	t.Logf("calibrated: %d Hz", cal.Hz)
	any := false
	for _, s := range kernelSources {
		hz, ok := s.read()
		if !ok {
			t.Logf("%s: unavailable here (%s)", s.name, s.why)
			continue
		}
		any = true
		d := (float64(hz) - float64(cal.Hz)) / float64(cal.Hz)
		t.Logf("%s: %d Hz, relative difference from calibration %.2g", s.name, hz, d)
		if math.Abs(d) > 1e-5 {
			t.Errorf("%s: %d Hz; calibration %d Hz: relative difference %.2g > 1e-5", s.name, hz, cal.Hz, d)
		}
	}
	if !any {
		t.Skip("no kernel source answers on this machine: Reference calibrates")
	}
}

// Each kernel source equals, to the kHz, the figure the kernel logged at
// boot: the refined calibration if it refined, else the detected one.
func TestKernelSourcesAgainstKernelLog(t *testing.T) {
	log, from := kernelLog()
	if log == nil {
		t.Skipf("kernel log unreadable (%s): run as root, or with dmesg_restrict 0", from)
	}
	var mhz string
	re := regexp.MustCompile(`tsc: (?:Detected|Refined TSC clocksource calibration:) ([0-9]+\.[0-9]{3}) MHz`)
	for _, m := range re.FindAllSubmatch(log, -1) {
		mhz = string(m[1]) // the last, the refined one if any
	}
	if mhz == "" {
		t.Skipf("no TSC frequency in the kernel log from %s (rotated out?)", from)
	}
	khz, err := strconv.ParseUint(mhz[:len(mhz)-4]+mhz[len(mhz)-3:], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	any := false
	for _, s := range kernelSources {
		hz, ok := s.read()
		if !ok {
			continue
		}
		any = true
		t.Logf("%s: %d Hz; kernel log (%s): %s MHz", s.name, hz, from, mhz)
		// The kernel logs the page's own figure where kvmclock is its
		// calibrate_tsc (a KVM guest, by CPUID). A guest of another
		// hypervisor that keeps time with kvm-clock (this project's VMs)
		// detects its TSC itself: its figure may differ from the page's
		// by the page's truncation to the kHz, scaled by 2^-shift (at
		// most 2 kHz: 2096.023 MHz logged, 2096.022 from the page).
		var slack uint64
		if s.name == "kvmclock" && !kvmStableClock() {
			slack = 2000
		}
		if d := max(hz, khz*1000) - min(hz, khz*1000); d > slack {
			t.Errorf("%s: %d Hz; the kernel logged %s MHz (allowed %d Hz apart)", s.name, hz, mhz, slack)
		}
	}
	if !any {
		t.Skip("no kernel source answers on this machine")
	}
}

// kernelLog returns the kernel's log and where it came from: dmesg, else
// /dev/kmsg (read without blocking up to its end), else journalctl -k.
func kernelLog() ([]byte, string) {
	var tried []string
	if out, err := exec.Command("dmesg").Output(); err == nil && len(out) > 0 {
		return out, "dmesg"
	} else {
		tried = append(tried, fmt.Sprintf("dmesg: %v", err))
	}
	if fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		var log []byte
		buf := make([]byte, 8192)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EPIPE {
				continue // records overwritten while reading
			}
			if n <= 0 || err != nil {
				break
			}
			log = append(log, buf[:n]...)
		}
		unix.Close(fd)
		if len(log) > 0 {
			return log, "/dev/kmsg"
		}
	} else {
		tried = append(tried, fmt.Sprintf("/dev/kmsg: %v", err))
	}
	if out, err := exec.Command("journalctl", "-k", "-b", "-q", "--no-pager").Output(); err == nil && len(out) > 0 {
		return out, "journalctl -k"
	} else {
		tried = append(tried, fmt.Sprintf("journalctl -k: %v", err))
	}
	return nil, fmt.Sprint(tried)
}

// A clock source list names kvm-clock only as a whole word.
func TestListsKVMClock(t *testing.T) {
	for list, want := range map[string]bool{
		"kvm-clock \n":                  true, // this project's VMs
		"tsc kvm-clock hpet acpi_pm \n": true,
		"tsc hpet acpi_pm \n":           false,
		"kvm-clockx tsc\n":              false,
		"":                              false,
	} {
		if got := listsKVMClock([]byte(list)); got != want {
			t.Errorf("listsKVMClock(%q) = %v, want %v", list, got, want)
		}
	}
}

// The kernel's pvclock_tsc_khz on known scales: this machine's KVM
// (2596.146 MHz, logged "tsc: Detected 2596.146 MHz processor"), and the
// pages to refuse.
func TestPvclockHz(t *testing.T) {
	good := pvclock{version: 54, mul: 3308724271, shift: -1, flags: pvclockTSCStable}
	for _, tc := range []struct {
		name string
		p    pvclock
		hz   uint64
		ok   bool
	}{
		{"kvm 2596.146 MHz", good, 2596146000, true},
		{"1 GHz", pvclock{version: 2, mul: 1 << 31, shift: 1, flags: pvclockTSCStable}, 1e9, true},
		{"guest stopped flag", func() pvclock { p := good; p.flags |= pvclockGuestStopped; return p }(), 2596146000, true},
		{"update in progress", func() pvclock { p := good; p.version = 55; return p }(), 0, false},
		{"never written", pvclock{}, 0, false},
		{"unstable", func() pvclock { p := good; p.flags = 0; return p }(), 0, false},
		{"unknown flags", func() pvclock { p := good; p.flags = 0x81; return p }(), 0, false},
		{"shift out of range", func() pvclock { p := good; p.shift = 40; return p }(), 0, false},
		{"implausible rate", func() pvclock { p := good; p.shift = 6; return p }(), 0, false},
	} {
		hz, ok := pvclockHz(tc.p)
		if ok != tc.ok || (ok && hz != tc.hz) {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, hz, ok, tc.hz, tc.ok)
		}
	}
}

// The perf page's scale recovers tsc_khz from the mult the kernel computes
// (clocks_calc_mult_shift(khz, NSEC_PER_MSEC): the largest shift up to 32
// keeping mult below 2^32, mult rounded to nearest), for rates across the
// range; pages without cap_user_time are refused.
func TestPerfScaleHz(t *testing.T) {
	const caps = perfCapBit0Deprecated | perfCapUserTime
	for _, khz := range []uint64{100_000, 1_000_000, 2_596_146, 3_000_001, 4_999_999, 19_999_999} {
		shift := uint16(32)
		for ; shift > 0; shift-- {
			if m := (uint64(1e6)<<shift + khz/2) / khz; m>>32 == 0 {
				break
			}
		}
		mult := uint32((uint64(1e6)<<shift + khz/2) / khz)
		hz, ok := perfScaleHz(caps, shift, mult)
		if !ok || hz != khz*1000 {
			t.Errorf("tsc_khz %d (shift %d, mult %d): %d, %v", khz, shift, mult, hz, ok)
		}
	}
	for _, tc := range []struct {
		name  string
		caps  uint64
		shift uint16
		mult  uint32
	}{
		{"no cap_user_time", perfCapBit0Deprecated, 32, 1654384185},
		{"old kernel, bit 0 ambiguous", perfCapUserTime | 1, 32, 1654384185},
		{"mult 0", caps, 32, 0},
		{"shift 64", caps, 64, 1654384185},
		{"too coarse to find the kHz", caps, 2, 2},
	} {
		if hz, ok := perfScaleHz(tc.caps, tc.shift, tc.mult); ok {
			t.Errorf("%s: accepted, %d Hz", tc.name, hz)
		}
	}
}

func TestParsePvclockAddr(t *testing.T) {
	const (
		vvar   = "7fd3afb3b000-7fd3afb3f000 r--p 00000000 00:00 0                          [vvar]\n"
		vclock = "7fd3afb3f000-7fd3afb41000 r--p 00000000 00:00 0                          [vvar_vclock]\n"
		vdso   = "7fd3afb41000-7fd3afb43000 r-xp 00000000 00:00 0                          [vdso]\n"
		heap   = "55f11ae85000-55f11aea6000 rw-p 00000000 00:00 0                          [heap]\n"
		short  = "7fd3afb3b000-7fd3afb3c000 r--p 00000000 00:00 0                          [vvar]\n"
	)
	for _, tc := range []struct {
		name, maps string
		addr       uintptr
		ok         bool
	}{
		{"6.13 and later", heap + vvar + vclock + vdso, 0x7fd3afb3f000, true},
		{"before 6.13", heap + vvar + vdso, 0x7fd3afb3c000, true},
		{"one-page vvar", short + vdso, 0, false},
		{"no vvar", heap + vdso, 0, false},
		{"a file named like it", "7fd3afb3b000-7fd3afb3f000 r--p 00000000 08:01 42 /tmp/x[vvar_vclock]y\n", 0, false},
		{"malformed", "zz-7fd3afb3f000 r--p 00000000 00:00 0 [vvar_vclock]\n", 0, false},
		{"empty", "", 0, false},
	} {
		addr, ok := parsePvclockAddr([]byte(tc.maps), 4096)
		if addr != tc.addr || ok != tc.ok {
			t.Errorf("%s: %#x, %v; want %#x, %v", tc.name, addr, ok, tc.addr, tc.ok)
		}
	}
}

// A page that faults (here one just unmapped; in the kernel's vvar area, a
// pvclock page not mapped because kvm-clock was never in use) is refused,
// not a crash.
func TestReadPvclockFault(t *testing.T) {
	m, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	addr := uintptr(unsafeAddr(m))
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
	if p, ok := readPvclock(addr); ok {
		t.Errorf("read an unmapped page: %+v", p)
	}
	// And a mapped page reads as itself.
	m, err = unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copy(m, []byte{2, 0, 0, 0})
	if p, ok := readPvclock(uintptr(unsafeAddr(m))); !ok || p.version != 2 {
		t.Errorf("read a mapped page: %+v, %v", p, ok)
	}
}

// The sources' cold cost: each call does all its work (nothing cached), as
// the first ReferenceFrequency call of a process does. Compare with
// BenchmarkReference/calibrate.
//
//	go test -run '^$' -bench Reference -benchmem -count 5 ./internal/freq/
func BenchmarkReference(b *testing.B) {
	for _, s := range kernelSources {
		b.Run(s.name, func(b *testing.B) {
			// perfmmap costs the same whether or not the page has
			// cap_user_time; kvmclock returns at once outside KVM.
			if _, ok := s.read(); !ok && s.name != "perfmmap" {
				b.Skipf("unavailable: %s", s.why)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.read()
			}
		})
	}
	b.Run("reference", func(b *testing.B) { // the whole chain, as ReferenceFrequency's first call
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reference(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cpuid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			statedTSCFrequency()
		}
	})
	b.Run("calibrate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := calibrateTSC(); err != nil {
				b.Skip(err)
			}
		}
	})
}
