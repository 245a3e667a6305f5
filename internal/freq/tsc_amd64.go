package freq

// cpuid executes the CPUID instruction (tsc_amd64.s).
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// rdtsc reads the time-stamp counter, after an LFENCE (tsc_amd64.s).
func rdtsc() uint64

// CPUID leaves that state the TSC frequency (Intel SDM vol. 2A, CPUID;
// VMware's and KVM's hypervisor CPUID interfaces).
const (
	leafTSCCrystal    = 0x15       // EBX/EAX = TSC / crystal ratio, ECX = crystal Hz
	leafBaseFrequency = 0x16       // EAX = base frequency, MHz
	leafHypervisor    = 0x40000000 // EAX = largest hypervisor leaf
	leafHypervisorTSC = 0x40000010 // EAX = TSC kHz, EBX = APIC bus kHz
	featureHypervisor = 1 << 31    // leaf 1 ECX: running under a hypervisor
)

// statedTSCFrequency returns the TSC frequency where the CPU or the
// hypervisor states it exactly, and ok = false where neither does (every
// AMD processor, Intel before Skylake, most hypervisors).
func statedTSCFrequency() (f Frequency, ok bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf >= leafTSCCrystal {
		// The ratio without the crystal's frequency (ECX = 0) is no
		// statement: Intel's table of crystals per model is a guess the
		// kernel makes, and calibration does better than a guess.
		den, num, crystal, _ := cpuid(leafTSCCrystal, 0)
		if den != 0 && num != 0 && crystal != 0 {
			return Frequency{Hz: uint64(crystal) * uint64(num) / uint64(den), Source: SourceCPUIDCrystal}, true
		}
	}
	if _, _, ecx, _ := cpuid(1, 0); ecx&featureHypervisor != 0 {
		if maxHV, _, _, _ := cpuid(leafHypervisor, 0); maxHV >= leafHypervisorTSC && maxHV < leafHypervisor+0x10000 {
			if khz, _, _, _ := cpuid(leafHypervisorTSC, 0); khz != 0 {
				return Frequency{Hz: uint64(khz) * 1000, Source: SourceCPUIDHypervisor}, true
			}
		}
	}
	return Frequency{}, false
}

// baseFrequency returns CPUID leaf 0x16's base frequency, if stated.
func baseFrequency() (Frequency, bool) {
	if maxLeaf, _, _, _ := cpuid(0, 0); maxLeaf >= leafBaseFrequency {
		if mhz, _, _, _ := cpuid(leafBaseFrequency, 0); mhz&0xffff != 0 {
			return Frequency{Hz: uint64(mhz&0xffff) * 1e6, Source: SourceCPUIDBase}, true
		}
	}
	return Frequency{}, false
}
