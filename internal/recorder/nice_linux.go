package recorder

import (
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// backgroundSelf gives every thread of the calling process the lowest
// priority (nice 19), and the garbage collector a target of 400 %, and
// returns what gives them back the nice value the calling thread had and
// the collector its target. Linux keeps a nice value per thread, and a new thread
// takes its creator's: threads the Go runtime starts meanwhile are niced
// too, and the undo reaches every thread there is when it runs. CMD,
// started before, keeps its own. A thread that cannot be niced (it exited
// meanwhile) is skipped: nicing changes only how soon the recording's work
// runs, never what it records.
func backgroundSelf() (undo func()) {
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return func() {}
	}
	was := 20 - p // the raw system call answers 20 − nice
	setAll := func(nice int) {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
			}
		}
	}
	setAll(19)
	// The recording allocates a little per record; a higher GC target
	// makes fewer collections of a heap that only grows while it lasts.
	gc := debug.SetGCPercent(400)
	return func() {
		debug.SetGCPercent(gc)
		setAll(was)
	}
}
