package top

import "strconv"

// machineCPU is the whole machine's CPU use over the interval, as shares
// of all its CPUs (100 % = every CPU busy).
type machineCPU struct {
	cpus         int
	ok           bool
	user, system float64
	// per is each CPU's use (Linux, from the second refresh); perKnown
	// says whether the system tells it at all.
	per      []cpuUse
	perKnown bool
}

// cpuUse is one CPU's use over the interval (100 % = that CPU busy).
type cpuUse struct {
	cpu          int
	ok           bool
	user, system float64
}

// appendCPULine appends the line of one CPU for the "1" view:
// "cpu 3    12.5% (user 10.0%, system 2.5%)".
func appendCPULine(b []byte, u cpuUse) []byte {
	b = append(b, "cpu "...)
	n := len(b)
	b = strconv.AppendInt(b, int64(u.cpu), 10)
	for len(b)-n < 4 {
		b = append(b, ' ')
	}
	if !u.ok {
		return append(b, "    -"...)
	}
	var num [16]byte
	b = pad(b, string(strconv.AppendFloat(num[:0], u.user+u.system, 'f', 1, 64)), 5)
	b = append(b, "% (user "...)
	b = strconv.AppendFloat(b, u.user, 'f', 1, 64)
	b = append(b, "%, system "...)
	b = strconv.AppendFloat(b, u.system, 'f', 1, 64)
	return append(b, "%)"...)
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
