package goroutines

import (
	"fmt"
	"os"

	"github.com/cputime/cputime"
)

// threadClocks reads the threads' CPU times (GetThreadTimes, kernel plus
// user) through a handle per thread, opened once with the limited query
// right and kept until the thread has ended: while it is open the system
// keeps the thread's id for it, so a later thread cannot be read under the
// id, and its final times stay readable after it ends. The list is the
// system's process snapshot (cputime.Threads), one call a round.
type threadClocks struct {
	open map[int]*cputime.Thread
}

func (c *threadClocks) list() ([]int, error) {
	var tids []int
	for t, err := range cputime.Threads(os.Getpid()) {
		if err != nil {
			return nil, err
		}
		tids = append(tids, t.ID)
	}
	return tids, nil
}

// read: gone once the thread has exited; its times are then its last.
func (c *threadClocks) read(tid int) (cpu int64, gone bool, err error) {
	th := c.open[tid]
	if th == nil {
		th, err = cputime.OpenThreadAccess(tid, cputime.ThreadQueryLimitedInformation)
		if err != nil {
			return 0, true, err
		}
		// Listed as ours, but it may have ended and its id gone to
		// another process's thread before the open.
		if pid := th.ProcessID(); pid != os.Getpid() {
			th.Close()
			return 0, true, fmt.Errorf("thread %d: now of process %d: %w", tid, pid, cputime.ErrNotFound)
		}
		if c.open == nil {
			c.open = map[int]*cputime.Thread{}
		}
		c.open[tid] = th
	}
	tm, err := th.Times()
	if err != nil {
		return 0, true, err
	}
	return int64(tm.Total()), tm.ExitSource != cputime.ExitNone, nil
}

func (c *threadClocks) forget(tid int) {
	if th := c.open[tid]; th != nil {
		th.Close()
		delete(c.open, tid)
	}
}

func (c *threadClocks) close() {
	for tid := range c.open {
		c.forget(tid)
	}
}
