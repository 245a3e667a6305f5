package top

import (
	"strconv"
	"strings"
)

// sigName is a signal the k key can send: its name without "SIG" and its
// number on this system.
type sigName struct {
	name string
	num  int
}

// parseSignal reads a signal as kill(1) takes it: a name with or without
// "SIG" (any case) or a number; "" is the default, TERM.
func parseSignal(s string) (sigName, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = "TERM"
	}
	if n, err := strconv.Atoi(s); err == nil {
		for _, sg := range signals {
			if sg.num == n {
				return sg, true
			}
		}
		return sigName{}, false
	}
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for _, sg := range signals {
		if sg.name == s {
			return sg, true
		}
	}
	return sigName{}, false
}

func (s sigName) String() string { return "SIG" + s.name + " (" + strconv.Itoa(s.num) + ")" }
