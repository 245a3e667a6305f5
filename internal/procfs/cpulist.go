package procfs

import (
	"strconv"
	"strings"
)

// MaxCPU bounds the CPU numbers ParseCPUList accepts, and how many it
// returns: above the largest NR_CPUS any kernel is built with, so a
// malformed list (ranges repeated without end) cannot make it allocate
// without bound.
const MaxCPU = 1 << 16

// ParseCPUList parses the kernel's list of CPUs, as in
// /sys/devices/system/cpu/{possible,present,online} and cpuset files:
// comma-separated numbers and ranges ("0-3,5"), surrounding space ignored.
// It returns the CPU numbers in the order listed. An empty list, a
// reversed range, a number at or above MaxCPU or more than MaxCPU numbers
// in all is an error wrapping ErrFileParse.
func ParseCPUList(list string) ([]int, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return nil, parseError("CPU list", "empty")
	}
	var cpus []int
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := a, error(nil)
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || z < a || z >= MaxCPU || len(cpus)+z-a >= MaxCPU {
			return nil, parseError("CPU list", "%q", clip([]byte(list)))
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
