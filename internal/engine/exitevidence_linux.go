package engine

import (
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// A task found already exited (a zombie, or a thread-group leader that
// ended before its threads) carries no exit time, but the scheduler
// recorded when it last left a CPU: se.exec_start in its sched file
// (CONFIG_SCHED_DEBUG), on that CPU's task clock (rq_clock_task: sched_clock
// less interrupt and steal time where those are accounted). To date it, we
// move the calling thread onto the same CPU, so that the kernel schedules
// it in there and stamps its own exec_start from the same clock, read that
// and the wall clock together, and subtract. Interrupt and steal time on
// that CPU since the exit make the difference short, never long, so the
// result is an upper bound, and a close one.

// foundExited returns the exit of task tid of process pid, found already
// exited: from the scheduler's record where it is readable, else the moment
// it was found so.
func foundExited(pid, tid int) exitAt {
	now := time.Now()
	if at, ok := lastSwitchOut(pid, tid); ok && !at.After(now) {
		return exitAt{at, ExitScheduler}
	}
	return exitAt{now, ExitNoLaterThan}
}

// lastSwitchOut returns the wall-clock instant the exited task last left a
// CPU, if the kernel has sched files and the caller may run on that CPU.
// Its sched file and ours are the kernel's (sysProc): the stamps compared
// are of one CPU's clock.
func lastSwitchOut(pid, tid int) (time.Time, bool) {
	var pathBuf [96]byte
	path := strconv.AppendInt(procPath(sysProc.Root(), pathBuf[:0], pid, "task/"), int64(tid), 10)
	var buf [4096]byte
	st, err := readStat(append(path, "/stat"...), buf[:])
	if err != nil || st.Processor < 0 || st.PID != tid {
		return time.Time{}, false
	}
	cpu := st.Processor
	n, err := procfs.ReadFileAt(unix.AT_FDCWD, append(path, "/sched"...), buf[:])
	if err != nil {
		return time.Time{}, false
	}
	theirs, err := procfs.ParseSchedExecStart(buf[:n])
	if err != nil {
		return time.Time{}, false
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, one unix.CPUSet
	if unix.SchedGetaffinity(0, &old) != nil {
		return time.Time{}, false
	}
	one.Set(cpu)
	if unix.SchedSetaffinity(0, &one) != nil {
		return time.Time{}, false // a CPU outside our cpuset
	}
	defer unix.SchedSetaffinity(0, &old)
	// Setting the affinity moved us to cpu if we were elsewhere; yielding
	// makes the kernel schedule us in afresh there either way, which sets
	// our exec_start from that CPU's clock.
	unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	n, err = procfs.ReadFileAt(unix.AT_FDCWD, []byte(sysProc.Path("thread-self", "sched")), buf[:])
	wall := time.Now()
	if err != nil {
		return time.Time{}, false
	}
	ours, err := procfs.ParseSchedExecStart(buf[:n])
	if err != nil || ours < theirs {
		return time.Time{}, false
	}
	// Check we really ran there: if the kernel moved us meanwhile, the two
	// stamps come from different clocks.
	n, err = procfs.ReadFileAt(unix.AT_FDCWD, []byte(sysProc.Path("thread-self", "stat")), buf[:])
	if err != nil {
		return time.Time{}, false
	}
	if me, err := procfs.ParseStat(buf[:n]); err != nil || me.Processor != cpu {
		return time.Time{}, false
	}
	return wall.Add(-time.Duration(ours - theirs)), true
}
