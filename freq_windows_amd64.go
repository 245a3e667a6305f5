package cputime

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/cputime/cputime/internal/winapi"
)

// archFrequency returns the TSC frequency, the rate of the cycle times
// Windows reports on amd64: stated by CPUID where the CPU or hypervisor
// states it, else calibrated against QueryPerformanceCounter, else CPUID's
// base frequency.
func archFrequency() (CycleFrequency, error) {
	if f, ok := statedTSCFrequency(); ok {
		return f, nil
	}
	f, err := calibrateTSC()
	if err == nil {
		return f, nil
	}
	if f, ok := baseFrequency(); ok {
		return f, nil
	}
	return CycleFrequency{}, fmt.Errorf("finding the TSC frequency: %w", err)
}

// Calibration against QueryPerformanceCounter (QPC), whose rate Windows
// states (QueryPerformanceFrequency, 10 MHz on current versions). A QPC
// tick, 100 ns, is coarser than the TSC, so each endpoint of the interval
// is an edge of QPC: the TSC is read around QPC reads until QPC changes,
// and the new value was taken between the start of the read before and the
// end of the read that saw it. The error of an endpoint is at most half
// that bracket (two reads, about 100 ns), so over 40 ms the relative error
// is about 1e-6; the best of several edges is kept, and two halves of the
// interval must agree, which catches a descheduling the brackets would not.
const (
	qpcCalibrationHalf  = 20 * time.Millisecond
	qpcCalibrationRound = 2    // at most 2 × 40 ms of wall time
	qpcCalibrationBound = 2e-5 // accept a round whose error bound is below this
	qpcCalibrationAgree = 5e-5 // and whose halves agree to within this
	qpcCalibrationMax   = 1e-4 // the promise: never report a worse figure
	qpcEdges            = 5    // edges read per endpoint, the narrowest kept
	qpcSpinLimit        = 1 << 20
)

// qpcEdge is the TSC at the moment QPC reached ticks, within width.
type qpcEdge struct {
	tsc, width uint64
	ticks      int64
}

func readQPC() (int64, error) {
	var v int64
	if err := winapi.QueryPerformanceCounter(&v); err != nil {
		return 0, winError("QueryPerformanceCounter", err)
	}
	return v, nil
}

func sampleQPCEdge() (qpcEdge, error) {
	best := qpcEdge{width: math.MaxUint64}
	before := rdtsc()
	prev, err := readQPC()
	if err != nil {
		return qpcEdge{}, err
	}
	for range qpcEdges {
		for spin := 0; ; spin++ {
			t0 := rdtsc()
			v, err := readQPC()
			t1 := rdtsc()
			if err != nil {
				return qpcEdge{}, err
			}
			if v != prev {
				if t1 > before {
					if w := t1 - before; w < best.width {
						best = qpcEdge{tsc: before + w/2, width: w, ticks: v}
					}
				}
				prev, before = v, t0
				break
			}
			before = t0
			if spin == qpcSpinLimit {
				return qpcEdge{}, fmt.Errorf("QueryPerformanceCounter did not advance in %d reads: %w", qpcSpinLimit, ErrNotSupported)
			}
		}
	}
	if best.width == math.MaxUint64 {
		return qpcEdge{}, fmt.Errorf("the TSC went backwards in every read: %w", ErrNotSupported)
	}
	return best, nil
}

// qpcRate returns the TSC frequency between two edges and its error bound.
func qpcRate(a, b qpcEdge, qpcHz float64) (hz, bound float64) {
	dt, dq := float64(b.tsc)-float64(a.tsc), float64(b.ticks-a.ticks)
	if dt <= 0 || dq <= 0 {
		return 0, 1
	}
	return dt / dq * qpcHz, float64(a.width+b.width) / 2 / dt
}

func calibrateTSC() (CycleFrequency, error) {
	var qpf int64
	if err := winapi.QueryPerformanceFrequency(&qpf); err != nil {
		return CycleFrequency{}, winError("QueryPerformanceFrequency", err)
	}
	if qpf <= 0 {
		return CycleFrequency{}, fmt.Errorf("QueryPerformanceFrequency says %d Hz: %w", qpf, ErrNotSupported)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bestHz, bestBound := 0.0, 1.0
	for range qpcCalibrationRound {
		var e [3]qpcEdge
		for i := range e {
			if i > 0 {
				time.Sleep(qpcCalibrationHalf)
			}
			var err error
			if e[i], err = sampleQPCEdge(); err != nil {
				return CycleFrequency{}, fmt.Errorf("calibrating the TSC against QueryPerformanceCounter: %w", err)
			}
		}
		h1, _ := qpcRate(e[0], e[1], float64(qpf))
		h2, _ := qpcRate(e[1], e[2], float64(qpf))
		hz, bound := qpcRate(e[0], e[2], float64(qpf))
		if d := (h1 - h2) / hz; hz == 0 || d > qpcCalibrationAgree || d < -qpcCalibrationAgree {
			continue
		}
		if bound < bestBound {
			bestHz, bestBound = hz, bound
		}
		if bound < qpcCalibrationBound {
			break
		}
	}
	if bestBound > qpcCalibrationMax {
		return CycleFrequency{}, fmt.Errorf("calibrating the TSC against QueryPerformanceCounter: no agreement within %g", qpcCalibrationMax)
	}
	return CycleFrequency{Hz: uint64(bestHz + 0.5), Source: SourceCalibratedQPC}, nil
}
