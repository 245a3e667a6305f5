package freq

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// kernelFrequency returns the TSC frequency the running kernel itself
// uses, where it publishes it to an unprivileged process: the kvm-clock
// page under KVM, else the perf_event mmap page where sched_clock is the
// TSC. Neither sleeps; each is tried only where it can answer.
func kernelFrequency() (Frequency, bool) {
	if hz, ok := kvmClockHz(); ok {
		return Frequency{Hz: hz, Source: SourceKVMClock}, true
	}
	if hz, ok := perfMmapHz(); ok {
		return Frequency{Hz: hz, Source: SourcePerfMmap}, true
	}
	return Frequency{}, false
}

// The perf_event mmap page (include/uapi/linux/perf_event.h). Its
// capabilities word has cap_bit0_is_deprecated set by every kernel whose
// other bits mean what they say (3.12 and later); cap_user_time says
// time_mult and time_shift are valid.
const (
	perfCapBit0Deprecated = 1 << 1
	perfCapUserTime       = 1 << 3
)

// perfMmapHz reads the kernel's TSC frequency from the perf_event mmap
// page of a dummy software event on the calling thread, counting user mode
// only, which perf_event_paranoid 2 (the default) allows any process. On
// x86 the kernel fills time_mult and time_shift with its sched_clock scale,
// cyc2ns, which it computes from tsc_khz (its calibrated TSC frequency,
// refined if it refined it) and publishes only where sched_clock is that
// TSC scale (cap_user_time): not under KVM's paravirtual sched_clock, not
// with an unstable TSC. Four system calls: perf_event_open, mmap, munmap,
// close.
func perfMmapHz() (uint64, bool) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return 0, false // paranoid 3, seccomp, no perf events
	}
	defer unix.Close(fd)
	m, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, false
	}
	defer unix.Munmap(m)
	if len(m) < int(unsafe.Sizeof(unix.PerfEventMmapPage{})) {
		return 0, false
	}
	page := (*unix.PerfEventMmapPage)(unsafe.Pointer(&m[0]))
	for range 100 { // the kernel updates the page under a sequence count
		seq := atomic.LoadUint32(&page.Lock)
		caps, shift, mult := page.Capabilities, page.Time_shift, page.Time_mult
		if seq&1 == 0 && atomic.LoadUint32(&page.Lock) == seq {
			return perfScaleHz(caps, shift, mult)
		}
	}
	return 0, false
}

// perfScaleHz returns the TSC frequency of a sched_clock scale, ns =
// (cycles × mult) >> shift: 1e9 × 2^shift / mult, rounded to the kHz. The
// kernel computes mult from tsc_khz, rounded to the nearest integer
// (clocks_calc_mult_shift), so the quotient is within 1 / (2 mult) of
// tsc_khz (about 3e-10 at 2.6 GHz, where mult ≈ 1.65e9 with shift 32):
// rounding it to the kHz gives tsc_khz itself, as long as that error is
// well under half a kHz, which is checked.
func perfScaleHz(caps uint64, shift uint16, mult uint32) (uint64, bool) {
	if caps&perfCapBit0Deprecated == 0 || caps&perfCapUserTime == 0 || mult == 0 || shift > 63 {
		return 0, false
	}
	hi, lo := bits.Mul64(1e9, 1<<shift)
	if hi >= uint64(mult) {
		return 0, false
	}
	hz, _ := bits.Div64(hi, lo, uint64(mult))
	// Error of the quotient, in Hz: hz / (2 mult); require < 250 Hz.
	if hz/uint64(mult) >= 500 {
		return 0, false
	}
	return plausible((hz + 500) / 1000 * 1000)
}

// plausible accepts a TSC frequency between 100 MHz and 20 GHz, as the
// kernel would (anything else is a misread page).
func plausible(hz uint64) (uint64, bool) {
	return hz, hz >= 1e8 && hz <= 2e10
}

// KVM's paravirtual clock (Documentation/virt/kvm/x86/msr.rst,
// MSR_KVM_SYSTEM_TIME_NEW; arch/x86/include/asm/pvclock-abi.h): the
// hypervisor's ABI, the same on every kernel.
const (
	kvmSignature          = "KVMKVMKVM\x00\x00\x00"
	kvmFeatureClocksource = 1 << 0  // KVM_FEATURE_CLOCKSOURCE
	kvmFeatureClock2      = 1 << 3  // KVM_FEATURE_CLOCKSOURCE2
	kvmFeatureStable      = 1 << 24 // KVM_FEATURE_CLOCKSOURCE_STABLE_BIT
	pvclockTSCStable      = 1 << 0  // PVCLOCK_TSC_STABLE_BIT
	pvclockGuestStopped   = 1 << 1  // PVCLOCK_GUEST_STOPPED
)

// pvclock is struct pvclock_vcpu_time_info, 32 bytes.
type pvclock struct {
	version      uint32
	_            uint32
	tscTimestamp uint64
	systemTime   uint64
	mul          uint32 // tsc_to_system_mul
	shift        int8   // tsc_shift
	flags        uint8
	_            [2]uint8
}

// kvmClockHz reads, in a guest whose kernel keeps time with kvm-clock and
// whose clock is stable, the TSC frequency of the pvclock scale the
// hypervisor gives it: under KVM kvmclock's calibrate_tsc is
// kvm_get_tsc_khz, which computes tsc_khz from that scale exactly as
// pvclockHz does. The kernel maps CPU 0's pvclock into every process for
// the vDSO, read-only, wherever the kvm-clock clock source has been in use
// (as at every boot under KVM): page 0 of [vvar_vclock] since Linux 6.13,
// page 1 of [vvar] before. Finding it costs one read of /proc/self/maps;
// where kvm-clock is not a clock source, nothing but the sysfs read.
func kvmClockHz() (uint64, bool) {
	if !kvmClockSource() {
		return 0, false
	}
	addr, ok := pvclockAddr()
	if !ok {
		return 0, false
	}
	p, ok := readPvclock(addr)
	if !ok {
		return 0, false
	}
	return pvclockHz(p)
}

// clocksources lists the kernel's clock sources.
const clocksources = "/sys/devices/system/clocksource/clocksource0/available_clocksource"

// kvmClockSource reports whether the kernel may keep time with kvm-clock:
// it lists kvm-clock among its clock sources (sysfs), or, where sysfs
// cannot be read, CPUID shows a KVM hypervisor offering a stable
// paravirtual clock (kvmStableClock). The list comes first because it is
// the kernel's own word and cheap: a guest of another hypervisor can run
// on kvm-clock without KVM's CPUID signature (this project's test VMs say
// "bhyve bhyve " and keep time with kvm-clock), and there the search for
// the signature is 256 CPUID exits, each a trip to the hypervisor, at
// each start (docs/figures.md). The page's
// own stable flag is checked when it is read (pvclockHz).
func kvmClockSource() bool {
	var buf [512]byte
	n, err := procfs.ReadFileAt(unix.AT_FDCWD, []byte(clocksources), buf[:])
	if err != nil {
		return kvmStableClock()
	}
	return listsKVMClock(buf[:n])
}

// listsKVMClock reports whether a clock source list (sysfs's
// available_clocksource: names separated by spaces) names kvm-clock.
func listsKVMClock(list []byte) bool {
	for _, name := range bytes.Fields(list) {
		if string(name) == "kvm-clock" {
			return true
		}
	}
	return false
}

// kvmStableClock reports whether CPUID shows a KVM hypervisor offering the
// paravirtual clock with a stable TSC. KVM's leaves may sit above Hyper-V's
// (at 0x40000100, ...), as the kernel's kvm_cpuid_base searches.
func kvmStableClock() bool {
	if _, _, ecx, _ := cpuid(1, 0); ecx&featureHypervisor == 0 {
		return false
	}
	for base := uint32(leafHypervisor); base < leafHypervisor+0x10000; base += 0x100 {
		_, b, c, d := cpuid(base, 0)
		var sig [12]byte
		for i, r := range [3]uint32{b, c, d} {
			sig[4*i], sig[4*i+1], sig[4*i+2], sig[4*i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
		}
		if string(sig[:]) == kvmSignature {
			features, _, _, _ := cpuid(base+1, 0)
			return features&(kvmFeatureClocksource|kvmFeatureClock2) != 0 && features&kvmFeatureStable != 0
		}
	}
	return false
}

// pvclockAddr finds the page the kernel maps the pvclock to, by its name in
// /proc/self/maps: an openat, a read per 4 KiB of it (a Go program's is
// about 3 KiB) and one more for the end, a close.
func pvclockAddr() (uintptr, bool) {
	for size := 16 << 10; size <= 4<<20; size *= 4 {
		buf := make([]byte, size)
		n, err := procfs.ReadFileAt(unix.AT_FDCWD, []byte("/proc/self/maps"), buf)
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		if err != nil {
			return 0, false
		}
		return parsePvclockAddr(buf[:n], os.Getpagesize())
	}
	return 0, false
}

// parsePvclockAddr returns page 0 of [vvar_vclock] if there is one, else
// page 1 of [vvar], if the mapping is that long.
func parsePvclockAddr(maps []byte, pageSize int) (uintptr, bool) {
	var vvar, vvarEnd uint64
	for line := range bytes.Lines(maps) {
		line = bytes.TrimRight(line, " \n")
		name := line[bytes.LastIndexByte(line, ' ')+1:]
		if !bytes.Equal(name, []byte("[vvar_vclock]")) && !bytes.Equal(name, []byte("[vvar]")) {
			continue
		}
		span, _, _ := bytes.Cut(line, []byte(" "))
		loS, hiS, ok := bytes.Cut(span, []byte("-"))
		lo, err1 := strconv.ParseUint(string(loS), 16, 64)
		hi, err2 := strconv.ParseUint(string(hiS), 16, 64)
		if !ok || err1 != nil || err2 != nil || hi <= lo {
			return 0, false
		}
		if name[len(name)-2] == 'k' { // [vvar_vclock]
			return uintptr(lo), true
		}
		vvar, vvarEnd = lo, hi
	}
	if vvar != 0 && vvarEnd-vvar >= 2*uint64(pageSize) {
		return uintptr(vvar) + uintptr(pageSize), true
	}
	return 0, false
}

// readPvclock copies the pvclock at addr, retrying while the hypervisor
// updates it (odd version). The kernel maps the page only where the
// kvm-clock clock source has been in use and raises SIGBUS otherwise, which
// SetPanicOnFault turns into a recoverable panic for this goroutine.
func readPvclock(addr uintptr) (p pvclock, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			p, ok = pvclock{}, false
		}
	}()
	src := (*pvclock)(unsafe.Add(unsafe.Pointer(nil), addr))
	for range 100 {
		v := atomic.LoadUint32(&src.version)
		p = *src
		if v&1 == 0 && atomic.LoadUint32(&src.version) == v {
			p.version = v
			return p, true
		}
	}
	return pvclock{}, false
}

// pvclockHz returns the TSC frequency of a pvclock scale as the kernel's
// pvclock_tsc_khz computes it, so the same figure to the Hz: kHz =
// (1e6 << 32) / mul, then shifted by -shift; ns = ((tsc << shift) × mul) >>
// 32 (a negative shift shifts right). KVM normalises mul to at least 2^31,
// so the scale itself is good to 2.5e-10; the kernel's truncation to the
// kHz, scaled by 2^-shift, costs at most 2^-shift kHz (2 kHz, 8e-7 of
// 2.6 GHz, with shift -1).
func pvclockHz(p pvclock) (uint64, bool) {
	if p.version == 0 || p.version&1 != 0 || p.flags&pvclockTSCStable == 0 ||
		p.flags&^(pvclockTSCStable|pvclockGuestStopped) != 0 || p.mul < 1<<24 ||
		p.shift < -8 || p.shift > 8 {
		return 0, false
	}
	khz := (uint64(1e6) << 32) / uint64(p.mul)
	if p.shift < 0 {
		khz <<= -p.shift
	} else {
		khz >>= p.shift
	}
	return plausible(khz * 1000)
}
