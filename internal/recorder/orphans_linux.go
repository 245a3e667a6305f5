package recorder

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// killRounds bounds killOrphans: each round kills the children left, whose
// own children the kernel then hands to us for the next. A tree deeper
// than this that forks as fast as it is killed is left running (counted).
const killRounds = 100

// waitOrphans waits, up to limit, until every orphan adopted as subreaper
// has exited, reaping each into o: the rest of CMD's tree once CMD has
// exited. CMD's zombie (pid cmd) is left for the recording's Stop and
// Cmd.Wait. Signals from sigs are passed on to the orphans while it waits,
// as parent passes them to CMD. When the time runs out (o.TimedOut) or ctx
// is done, the orphans left are killed and reaped where kill is set, and
// otherwise left running (o.Running).
//
// The orphans are found by listing this process's children: waitid's
// P_ALL with WNOWAIT offers the oldest zombie child first, which is CMD's,
// and never the orphans behind it.
func waitOrphans(ctx context.Context, cmd int, limit time.Duration, kill bool, sigs <-chan os.Signal, o *Orphans) {
	start := time.Now()
	woke := start
	chld, stop := notifyChild()
	defer stop()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		// After notifyChild: an orphan that exits from here on sends a
		// SIGCHLD that the select below receives.
		left := reapChildren(cmd, o)
		if len(left) == 0 {
			// Until the SIGCHLD of the last one, not the listing after it.
			o.Waited, o.Running = woke.Sub(start), 0
			return
		}
		select {
		case <-chld:
			woke = time.Now()
			continue
		case s := <-sigs:
			sig, ok := s.(syscall.Signal)
			for _, pid := range left {
				// As parent passes them to CMD: not a second ^C.
				if ok && (sig == syscall.SIGTERM || sig == syscall.SIGHUP || !terminalSent(pid)) {
					unix.Kill(pid, sig) // fails only for one gone meanwhile
				}
			}
			continue
		case <-timer.C:
			o.TimedOut = true
		case <-ctx.Done():
		}
		o.Waited = time.Since(start)
		if kill {
			killOrphans(cmd, o)
		}
		o.Running = len(children(cmd))
		return
	}
}

// reapChildren reaps every child but cmd that has exited, adding its
// rusage to o, and returns the ones still running.
func reapChildren(cmd int, o *Orphans) []int {
	var left []int
	for _, pid := range children(cmd) {
		var ru unix.Rusage
		var ws unix.WaitStatus
		n, err := unix.Wait4(pid, &ws, unix.WNOHANG, &ru)
		switch {
		case err == nil && n == pid:
			o.Reaped++
			o.Usage.Add(usageOf(&ru))
		case err == nil && n == 0:
			left = append(left, pid)
		}
	}
	return left
}

// killOrphans kills every child but cmd and reaps it into o, round after
// round: a killed orphan's children become ours in turn.
func killOrphans(cmd int, o *Orphans) {
	for range killRounds {
		left := children(cmd)
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			if unix.Kill(pid, unix.SIGKILL) == nil {
				o.Killed++
			}
		}
		for _, pid := range left {
			var ru unix.Rusage
			var ws unix.WaitStatus
			if n, err := unix.Wait4(pid, &ws, 0, &ru); err == nil && n == pid {
				o.Reaped++
				o.Usage.Add(usageOf(&ru))
			}
		}
	}
}

// children lists this process's children but cmd (0: all): from each
// thread's children file where the kernel has them (CONFIG_PROC_CHILDREN),
// else from the parent field of every process's stat. An adopted orphan
// can be the child of any of our threads.
func children(cmd int) []int {
	var out []int
	self := os.Getpid()
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		listed := true
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
			if err != nil {
				listed = false
				break
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != cmd {
					out = append(out, pid)
				}
			}
		}
		if listed {
			return out
		}
		out = nil
	}
	pids, err := procfs.NewFS("").PIDs()
	if err != nil {
		return nil
	}
	buf := make([]byte, 0, 1024)
	for _, pid := range pids {
		if pid == cmd || pid == self {
			continue
		}
		st, err := readStatFile("/proc/"+strconv.Itoa(pid)+"/stat", buf)
		if err == nil && st.PPID == self {
			out = append(out, pid)
		}
	}
	return out
}
