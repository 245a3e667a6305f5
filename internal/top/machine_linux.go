package top

import (
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/sampler"
)

// machineReader reads the whole machine's CPU use from /proc/stat (in
// USER_HZ ticks: the kernel keeps no exact per-CPU busy time).
type machineReader struct {
	fs   procfs.FS
	prev procfs.CPUStat
	have bool
}

func (m *machineReader) read(*sampler.Sample) machineCPU {
	st, err := m.fs.ReadSysStat()
	if err != nil {
		return machineCPU{}
	}
	cur := st.Total
	out := machineCPU{cpus: len(st.CPUs)}
	if m.have {
		user := float64(cur.User + cur.Nice - m.prev.User - m.prev.Nice)
		sys := float64(cur.System + cur.IRQ + cur.SoftIRQ - m.prev.System - m.prev.IRQ - m.prev.SoftIRQ)
		all := user + sys + float64(cur.Idle+cur.IOWait+cur.Steal-m.prev.Idle-m.prev.IOWait-m.prev.Steal)
		if all > 0 {
			out.ok = true
			out.user, out.system = 100*user/all, 100*sys/all
		}
	}
	m.prev, m.have = cur, true
	return out
}
