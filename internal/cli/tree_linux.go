package cli

import (
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

// openTree opens /proc/PID/stat and returns what reads the tree's times
// from it once the process has exited: its own utime and stime plus its
// reaped descendants' cutime and cstime, in USER_HZ ticks. It returns nil
// where the file cannot be opened, and the function returns an invalid tree
// where the process was already reaped (the kernel then has nothing left).
func openTree(pid int) func() tree {
	f, err := procfs.NewFS("").OpenStat(pid)
	if err != nil {
		return nil
	}
	return func() tree {
		defer f.Close()
		st, err := f.Read()
		if err != nil {
			return tree{}
		}
		ns := func(t uint64) time.Duration { return time.Duration(account.TicksToNanos(t)) }
		return tree{valid: true, User: ns(st.UTime + st.CUTime), Kernel: ns(st.STime + st.CSTime)}
	}
}
