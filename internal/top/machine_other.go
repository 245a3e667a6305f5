//go:build !linux

package top

import (
	"runtime"

	"github.com/cputime/cputime/sampler"
)

// machineReader sums the processes' CPU over the interval: without
// /proc/stat, the machine's use is what its processes used (all of them
// when no -p or name filter narrows the sampler).
type machineReader struct{}

func (m *machineReader) read(x *sampler.Sample) machineCPU {
	out := machineCPU{cpus: runtime.NumCPU()}
	if x.First || x.Interval <= 0 {
		return out
	}
	var user, sys float64
	for _, p := range x.Processes {
		share := p.Delta.Seconds()
		if t := p.Times.Total(); t > 0 {
			user += share * float64(p.Times.User) / float64(t)
			sys += share * float64(p.Times.Kernel) / float64(t)
		}
	}
	all := x.Interval.Seconds() * float64(out.cpus)
	out.ok = true
	out.user, out.system = 100*user/all, 100*sys/all
	return out
}
