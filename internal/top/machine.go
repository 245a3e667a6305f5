package top

import "strconv"

// machineCPU is the whole machine's CPU use over the interval, as shares
// of all its CPUs (100 % = every CPU busy).
type machineCPU struct {
	cpus         int
	ok           bool
	user, system float64
}

func (m machineCPU) appendText(b []byte, first bool) []byte {
	if !m.ok || first {
		b = append(b, '-')
	} else {
		b = strconv.AppendFloat(b, m.user+m.system, 'f', 1, 64)
		b = append(b, '%')
	}
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(m.cpus), 10)
	b = append(b, " CPUs"...)
	if m.ok && !first {
		b = append(b, " (user "...)
		b = strconv.AppendFloat(b, m.user, 'f', 1, 64)
		b = append(b, "%, system "...)
		b = strconv.AppendFloat(b, m.system, 'f', 1, 64)
		b = append(b, "%)"...)
	}
	return b
}
