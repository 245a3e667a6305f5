package freq

import (
	"fmt"
	"math"
	"os"

	"github.com/cputime/cputime/internal/winapi"
)

// kernelFrequency: Windows publishes no TSC frequency of its own to user
// space (QueryPerformanceFrequency is QPC's rate, 10 MHz).
func kernelFrequency() (Frequency, bool) { return Frequency{}, false }

// calibrateTSC calibrates the TSC against QueryPerformanceCounter (QPC),
// whose rate Windows states (QueryPerformanceFrequency, 10 MHz on current
// versions); see calibrateAgainst. A QPC tick, 100 ns, is coarser than the
// TSC, so each point is an edge of QPC: the TSC is read around QPC reads
// until QPC changes, and the new value was taken between the start of the
// read before and the end of the read that saw it. The error of a point is
// at most half that bracket (two reads, about 100 ns), so over 40 ms the
// relative error is about 1e-6; the narrowest of several edges is kept.
func calibrateTSC() (Frequency, error) {
	var qpf int64
	if err := winapi.QueryPerformanceFrequency(&qpf); err != nil {
		return Frequency{}, os.NewSyscallError("QueryPerformanceFrequency", err)
	}
	if qpf <= 0 {
		return Frequency{}, fmt.Errorf("QueryPerformanceFrequency says %d Hz: %w", qpf, ErrNotSupported)
	}
	return calibrateAgainst("QueryPerformanceCounter", float64(qpf), sampleQPCEdge, SourceCalibratedQPC)
}

const (
	qpcEdges     = 5 // edges read per point, the narrowest kept
	qpcSpinLimit = 1 << 20
)

func readQPC() (int64, error) {
	var v int64
	if err := winapi.QueryPerformanceCounter(&v); err != nil {
		return 0, os.NewSyscallError("QueryPerformanceCounter", err)
	}
	return v, nil
}

func sampleQPCEdge() (tscPoint, error) {
	best := tscPoint{width: math.MaxUint64}
	before := rdtsc()
	prev, err := readQPC()
	if err != nil {
		return tscPoint{}, err
	}
	for range qpcEdges {
		for spin := 0; ; spin++ {
			t0 := rdtsc()
			v, err := readQPC()
			t1 := rdtsc()
			if err != nil {
				return tscPoint{}, err
			}
			if v != prev {
				if t1 > before {
					if w := t1 - before; w < best.width {
						best = tscPoint{tsc: before + w/2, width: w, ref: uint64(v)}
					}
				}
				prev, before = v, t0
				break
			}
			before = t0
			if spin == qpcSpinLimit {
				return tscPoint{}, fmt.Errorf("QueryPerformanceCounter did not advance in %d reads: %w", qpcSpinLimit, ErrNotSupported)
			}
		}
	}
	if best.width == math.MaxUint64 {
		return tscPoint{}, fmt.Errorf("the TSC went backwards in every read: %w", ErrNotSupported)
	}
	return best, nil
}
