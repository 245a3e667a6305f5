package recorder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startupEnv makes the test binary a stand-in for "cputime run": it starts
// the command in its other arguments through Start and waits. With
// "block" it prints the launcher's pid once the counters are open and never
// lets the launcher go; with "run" it prints CMD's pid once CMD runs.
const startupEnv = "CPUTIME_RECORDER_STARTUP"

func startupHelper(mode string) {
	args := flagArgs()
	cmd := exec.Command(args[0], args[1:]...)
	var o Options
	if mode == "block" {
		o.test = &testHooks{beforeRelease: func(pid int) {
			fmt.Println(pid)
			time.Sleep(time.Hour) // until killed
		}}
	}
	r, err := Start(cmd, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, ErrNotSupported) {
			os.Exit(3)
		}
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	cmd.Wait()
	r.Close()
	os.Exit(0)
}

// flagArgs is what follows "--" in the test binary's arguments.
func flagArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return nil
}

func startupCmd(mode string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	c.Env = append(os.Environ(), startupEnv+"="+mode)
	c.Stderr = os.Stderr
	return c
}

// subreaper makes the test process the reaper of the orphans of its
// descendants, until the test ends.
func subreaper(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a child subreaper: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// cputime killed while the launcher waits for it (the counters are open,
// CMD has not started): the launcher was never stopped, and it exits 125
// without running CMD.
func TestStartKilledBeforeRelease(t *testing.T) {
	subreaper(t)
	marker := filepath.Join(t.TempDir(), "ran")
	h := startupCmd("block", "sh", "-c", "echo > "+marker)
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		h.Wait()
		if h.ProcessState.ExitCode() == 3 {
			t.Skip("recording not possible here")
		}
		t.Fatalf("no pid from the helper: %v", err)
	}
	launcher, _ := strconv.Atoi(strings.TrimSpace(line))
	// Running its first instructions, then asleep in read: never stopped.
	for end := time.Now().Add(5 * time.Second); ; {
		st := procState(launcher)
		if st == 'S' {
			break
		}
		if st != 'R' || time.Now().After(end) {
			t.Errorf("the launcher waiting for its release is in state %c, want S", st)
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.Process.Kill()
	h.Wait()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(launcher, &ws, 0, nil); err != nil {
		t.Fatalf("the orphaned launcher did not come to us: %v", err)
	}
	if !ws.Exited() || ws.ExitStatus() != launcherExit {
		t.Errorf("the orphaned launcher ended with status %#x, want exit %d", uint32(ws), launcherExit)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("CMD ran after cputime died before releasing it")
	}
}

// SIGKILL of cputime at any moment of the start-up, 40 times: no process
// is ever left stopped, none dies of SIGTRAP (as under PTRACE_TRACEME,
// where a kill between the exec and the detach did). Three tries in four
// kill 0-2 ms after cputime's first child appears, close to the exec, the
// others 0-40 ms after cputime starts.
func TestStartKilledAnyMoment(t *testing.T) {
	subreaper(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	const tries = 40
	for i := range tries {
		h := startupCmd("run", "sleep", "30")
		h.Stdout = nil
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if i%4 == 3 {
			spin(time.Duration(rng.Int64N(int64(40 * time.Millisecond))))
		} else {
			for time.Since(t0) < 40*time.Millisecond && len(childrenOf(h.Process.Pid)) == 0 {
			}
			spin(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
		}
		h.Process.Kill()
		h.Wait()
		if h.ProcessState.ExitCode() == 3 {
			t.Skip("recording not possible here")
		}
		for _, pid := range childrenOf(os.Getpid()) {
			checkOrphan(t, i, pid)
		}
	}
}

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// checkOrphan waits (5 s at most) for an orphan to be out of any stop,
// then kills and reaps it: it must not have died of SIGTRAP.
func checkOrphan(t *testing.T, try, pid int) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; {
		st := procState(pid)
		if st != 't' && st != 'T' {
			break
		}
		if time.Now().After(end) {
			t.Errorf("try %d: process %d stopped (%c) for 5 s", try, pid, st)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return // not ours after all
	}
	// Exits are fine: the launcher's 125, the Go runtime's fork probe's 0.
	if ws.Signaled() && ws.Signal() == syscall.SIGTRAP {
		t.Errorf("try %d: process %d died of SIGTRAP", try, pid)
	}
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, tk := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tk.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// Start reports an exec of CMD that fails in the launcher as os/exec would
// have (*fs.PathError, "fork/exec PATH"), having reaped the launcher.
func TestStartExecError(t *testing.T) {
	cmd := exec.Command("/etc/passwd") // not executable
	r, err := Start(cmd)
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("recording not possible here: %v", err)
	}
	if r != nil || !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "fork/exec /etc/passwd") {
		t.Fatalf("Start of a non-executable file: %v", err)
	}
	if _, err := unix.Wait4(cmd.Process.Pid, nil, unix.WNOHANG, nil); err != unix.ECHILD {
		t.Errorf("the launcher was not reaped: %v", err)
	}
}

// What the launcher costs CMD's process: its CPU time (wait4's rusage) when
// it runs /bin/true directly and through the launcher (released at once, no
// counters), in ns of CPU per run (cpu-ns/op; kernel-ns/op the kernel
// part).
func BenchmarkLauncher(b *testing.B) {
	for _, via := range []string{"direct", "launcher"} {
		b.Run(via, func(b *testing.B) {
			var cpu, kernel time.Duration
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if via == "direct" {
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
				} else {
					h, err := startHeld(cmd)
					if errors.Is(err, ErrNotSupported) {
						b.Skip(err)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := h.release(); err != nil {
						b.Fatal(err)
					}
					if err := cmd.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				kernel += cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(kernel.Nanoseconds())/float64(b.N), "kernel-ns/op")
		})
	}
}

// checkLauncherCode assembles src with the binutils as and objcopy named
// and compares the code with launcherCode; it skips where they are not
// installed.
func checkLauncherCode(t *testing.T, as, objcopy, src string) {
	as, err := exec.LookPath(as)
	if err != nil {
		t.Skipf("%s is not installed (binutils)", as)
	}
	objcopy, err = exec.LookPath(objcopy)
	if err != nil {
		t.Skipf("%s is not installed (binutils)", objcopy)
	}
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "launcher.o"), filepath.Join(dir, "launcher.bin")
	if out, err := exec.Command(as, "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", as, err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", objcopy, err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, launcherCode) {
		t.Errorf("launcherCode is not %s:\n got % x\nwant % x", src, launcherCode, code)
	}
}

// A signal that ends CMD's process during the start-up (a ^C reaches the
// launcher with cputime) is not a failure to start: Start returns, and the
// process ended by that signal, which run reports as CMD's end (it does
// not start CMD again).
func TestStartLauncherInterrupted(t *testing.T) {
	cmd := exec.Command("true")
	r, err := Start(cmd, Options{test: &testHooks{beforeRelease: func(pid int) {
		unix.Kill(pid, unix.SIGINT)
		exitedNotReaped(t, pid)
	}}})
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("recording not possible here: %v", err)
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer r.Close()
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("CMD's process ended %v, want killed by SIGINT", cmd.ProcessState)
	}
}
