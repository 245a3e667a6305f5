package recorder

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/timeline"
)

// terminalHelper prints terminalSent of itself and of a child in a group
// of its own (run it with a terminal, in the foreground), and exits.
func terminalHelper() {
	c := exec.Command("sleep", "30")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.Start() != nil {
		os.Exit(93)
	}
	fmt.Println(terminalSent(os.Getpid()), terminalSent(c.Process.Pid))
	c.Process.Kill()
	c.Wait()
	os.Exit(0)
}

// terminalSent: a process in its terminal's foreground process group got
// a SIGINT from the terminal with us; one in a group of its own did not.
// The helper runs in
// a session of its own on a pseudo-terminal, which it controls.
func TestTerminalSent(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	c := helper("terminal")
	c.Stdin, c.Stderr = pts, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "true false" {
		t.Errorf("foreground, other group: %q, want \"true false\"", got)
	}
}

// The only thread of the top process takes the process's split on its own
// total; a process of two threads is left alone.
func TestOneThreadAlike(t *testing.T) {
	ms := time.Millisecond
	p := timeline.Process{User: 5 * ms, Threads: []timeline.Thread{{User: 5 * ms}}}
	oneThreadAlike(&p, cputime.Times{User: ms, Kernel: 4 * ms})
	if th := p.Threads[0]; th.User != ms || th.Kernel != 4*ms || p.User != ms || p.Kernel != 4*ms {
		t.Errorf("one thread: process %v/%v, thread %v/%v, want 1ms/4ms for both", p.User, p.Kernel, th.User, th.Kernel)
	}
	two := timeline.Process{User: 6 * ms, Threads: []timeline.Thread{{User: 5 * ms}, {User: ms}}}
	oneThreadAlike(&two, cputime.Times{Kernel: 6 * ms})
	if two.Threads[0].Kernel != 0 || two.User != 6*ms {
		t.Errorf("two threads changed: %+v", two)
	}
}

// Run's result agrees with wait4, an independent source: the tree's times
// are the rusage the kernel gave for CMD and its reaped descendants, the
// status is the shell's, and an orphan's CPU is in the tree when Run
// adopts orphans.
func TestRunOrphanInTree(t *testing.T) {
	// The shell starts a child that burns about 60 ms of CPU and exits
	// after its parent: an orphan, which only a subreaper reaps.
	cmd := exec.Command("sh", "-c", `(sh -c 'sleep 0.2; i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done' &) ; exit 3`)
	res, err := Run(context.Background(), cmd, RunOptions{AdoptOrphans: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ExitStatus(); got != 3 {
		t.Errorf("exit status %d, want 3", got)
	}
	if res.Orphans == nil {
		t.Skip("no subreaper here (PR_SET_CHILD_SUBREAPER refused)")
	}
	// The orphan outlived CMD: Run reports it running or reaped; wait for
	// it, then what the kernel gave for it is what the tree gained.
	if res.Orphans.Running+res.Orphans.Reaped != 1 {
		t.Errorf("orphans: %d reaped, %d running, want one in all", res.Orphans.Reaped, res.Orphans.Running)
	}
	ru := res.State.SysUsage().(*syscall.Rusage)
	own := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if tree := res.TreeUser + res.TreeKernel; tree != own+res.Orphans.User+res.Orphans.Kernel {
		t.Errorf("tree %v, want wait4's %v plus the orphans' %v", tree, own, res.Orphans.User+res.Orphans.Kernel)
	}
	for res.Orphans.Running > 0 { // reap it, as the next Run would
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err != nil {
			break
		}
		res.Orphans.Running--
	}
}

// A cancelled context kills CMD, and the record still comes back.
func TestRunContextKills(t *testing.T) {
	// Done at any moment, before or after CMD starts: the outcome is the
	// same, CMD killed and the record back.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cmd := exec.Command("sleep", "30")
	res, err := Run(ctx, cmd, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ExitStatus(); got != 128+int(syscall.SIGKILL) {
		t.Errorf("exit status %d, want SIGKILL's %d", got, 128+int(syscall.SIGKILL))
	}
	if res.Process.ID != cmd.Process.Pid || res.Process.Times.Exit.IsZero() {
		t.Errorf("record of %d (exit %v), want the process %d, exited", res.Process.ID, res.Process.Times.Exit, cmd.Process.Pid)
	}
}
