package top

import (
	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/sampler"
)

// machineReader reads the whole machine's CPU use, and each CPU's, from
// /proc/stat (in USER_HZ ticks: the kernel keeps no exact per-CPU busy
// time).
type machineReader struct {
	fs   procfs.FS
	prev procfs.CPUStat
	have bool
	cpus map[int]procfs.CPUStat // the previous read of each CPU by number
}

func (m *machineReader) read(*sampler.Sample) machineCPU {
	st, err := m.fs.ReadSysStat()
	if err != nil {
		return machineCPU{}
	}
	out := machineCPU{cpus: len(st.CPUs)}
	if m.have {
		out.user, out.system, out.ok = shares(m.prev, st.Total)
		out.perKnown = true
		for _, c := range st.CPUs {
			u := cpuUse{cpu: c.CPU}
			if p, ok := m.cpus[c.CPU]; ok {
				u.user, u.system, u.ok = shares(p, c)
			}
			out.per = append(out.per, u)
		}
	}
	if m.cpus == nil {
		m.cpus = map[int]procfs.CPUStat{}
	}
	clear(m.cpus)
	for _, c := range st.CPUs {
		m.cpus[c.CPU] = c
	}
	m.prev, m.have = st.Total, true
	return out
}

// shares are the user and system percentages of the ticks between two
// reads of one line of /proc/stat; ok is false when no tick passed.
func shares(prev, cur procfs.CPUStat) (user, system float64, ok bool) {
	u := float64(cur.User + cur.Nice - prev.User - prev.Nice)
	s := float64(cur.System + cur.IRQ + cur.SoftIRQ - prev.System - prev.IRQ - prev.SoftIRQ)
	all := u + s + float64(cur.Idle+cur.IOWait+cur.Steal-prev.Idle-prev.IOWait-prev.Steal)
	if all <= 0 {
		return 0, 0, false
	}
	return 100 * u / all, 100 * s / all, true
}
