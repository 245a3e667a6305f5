package recorder

import (
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adoptOrphans makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// a descendant whose parent exits (a daemon that double-forks) becomes our
// child instead of init's, so that we can reap it and count its times. It
// returns whether that worked and what undoes it.
func adoptOrphans() (bool, func()) {
	var was int32
	unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return false, func() {}
	}
	return true, func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, uintptr(was), 0, 0, 0) }
}

// notifyChild returns a channel that receives SIGCHLD, and what stops it.
func notifyChild() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGCHLD)
	return c, func() { signal.Stop(c) }
}

// reapOrphans reaps every child that has exited, but cmd (whose zombie Run
// still needs), adding their rusage to o: the orphans adopted as subreaper,
// the caller's only other children. It stops at cmd's zombie when the
// kernel offers it first; the orphans behind it wait for the next call.
func reapOrphans(cmd int, o *Orphans) {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
			return // ECHILD: none left
		}
		pid := siginfoPid(&info)
		if pid == 0 || pid == cmd {
			return
		}
		var ru unix.Rusage
		var ws unix.WaitStatus
		if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, &ru); err != nil || n != pid {
			return
		}
		o.Reaped++
		o.Usage.Add(usageOf(&ru))
	}
}

func usageOf(ru *unix.Rusage) Usage {
	return Usage{User: time.Duration(ru.Utime.Nano()), Kernel: time.Duration(ru.Stime.Nano()),
		MaxRSS: int64(ru.Maxrss), Voluntary: int64(ru.Nvcsw), Involuntary: int64(ru.Nivcsw)}
}

// siginfoPid is si_pid of a SIGCHLD siginfo: after si_signo, si_errno and
// si_code, at the union, which is 8-aligned on 64-bit systems.
func siginfoPid(info *unix.Siginfo) int {
	off := 3 * 4
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 4 * 4
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// childCount is how many children this process has (the orphans still
// running once CMD is reaped).
func childCount() int { return len(children(0)) }

// terminalSent says whether a SIGINT or SIGQUIT that reached us most likely
// reached CMD too: the controlling terminal's foreground process group is
// CMD's, so the terminal (^C, ^\) sent it to CMD with us. A signal sent to
// the caller alone (kill, a supervisor) is passed on.
func terminalSent(pid int) bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return false
	}
	pgid, err := unix.Getpgid(pid)
	return err == nil && pgid == fg
}

// treeTimes is the tree's times from the rusage wait4 gave for CMD: its own
// and those of every descendant that was waited for, to the microsecond.
func treeTimes(ps *os.ProcessState) (bool, time.Duration, time.Duration, *Usage) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return false, 0, 0, nil
	}
	return true, time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()),
		&Usage{MaxRSS: int64(ru.Maxrss), Voluntary: int64(ru.Nvcsw), Involuntary: int64(ru.Nivcsw)}
}
