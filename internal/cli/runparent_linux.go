package cli

import (
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What run does as CMD's parent, on Linux.

// adoptOrphans makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// a descendant whose parent exits (a daemon that double-forks) becomes our
// child instead of init's, so that we can reap it and count its times. It
// returns whether that worked and what undoes it (the tests run run in
// their own process).
func adoptOrphans() (bool, func()) {
	var was int32
	unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&was)), 0, 0, 0)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return false, func() {}
	}
	return true, func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, uintptr(was), 0, 0, 0) }
}

// reapOrphans reaps every child that has exited, but cmd (whose zombie run
// still needs), adding their rusage to o: the orphans adopted as subreaper,
// run's only other children. It stops at cmd's zombie when the kernel
// offers it first; the orphans behind it wait for the next call.
func reapOrphans(cmd int, o *orphans) {
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
		o.reaped++
		o.rusage.add(rusage{user: time.Duration(ru.Utime.Nano()), kernel: time.Duration(ru.Stime.Nano()),
			maxRSS: int64(ru.Maxrss), voluntary: int64(ru.Nvcsw), involuntary: int64(ru.Nivcsw)})
	}
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

// childCount is how many children this process has (run: the orphans still
// running once CMD is reaped).
func childCount() int {
	n := 0
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		n += len(strings.Fields(string(b)))
	}
	return n
}

// terminalSent says whether a SIGINT or SIGQUIT that reached us most likely
// reached CMD too: the controlling terminal's foreground process group is
// CMD's, so the terminal (^C, ^\) sent it to CMD with us. Then run does not
// pass it on, which would deliver it twice (a second ^C often means
// "quit now"). A signal sent to run alone (kill, a supervisor) is passed on.
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

// signalName is the signal's name, "SIGSEGV".
func signalName(s syscall.Signal) string { return unix.SignalName(s) }

// sigChild tells the subreaper that a child exited.
var sigChild os.Signal = syscall.SIGCHLD
