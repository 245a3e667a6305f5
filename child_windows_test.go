package cputime_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/winapi"
)

// The Windows counterparts of the Linux test helpers (child_linux_test.go,
// sys_linux_test.go, handle_linux_test.go) that the portable tests use,
// with the same contracts: the test binary doubles as the child process,
// in the modes the portable tests need.

const childEnv = "CPUTIME_TEST_CHILD"

func init() {
	underWine = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode)
		return
	}
	os.Exit(m.Run())
}

func runChild(mode string) {
	kind, arg, _ := strings.Cut(mode, ":")
	runtime.LockOSThread()
	switch kind {
	case "burn": // burn arg of CPU, then idle
		d, _ := time.ParseDuration(arg)
		burnCPU(d)
	case "idle":
	}
	fmt.Printf("ready %d\n", gettidForChild())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// child is a running copy of the test binary.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tid   int           // the thread that printed "ready"
	out   *bufio.Reader // the rest of its output
	// started lies before CreateProcess and startedAfter after Start returned.
	started, startedAfter time.Time
}

func startChild(t testing.TB, mode string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	c.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.startedAfter = time.Now()
	c.out = bufio.NewReader(stdout)
	line, err := c.out.ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child %q: %v", mode, err)
	}
	if _, err := fmt.Sscanf(line, "ready %d", &c.tid); err != nil {
		t.Fatalf("child %q said %q", mode, line)
	}
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop closes the child's stdin and waits for it to exit.
func (c *child) stop() *os.ProcessState {
	if c.cmd.ProcessState != nil {
		return c.cmd.ProcessState
	}
	c.stdin.Close()
	c.cmd.Wait()
	return c.cmd.ProcessState
}

func gettidForChild() int { return int(windows.GetCurrentThreadId()) }

// threadRusage is the calling thread's CPU time as Windows reports it,
// read directly (not through the package under test).
func threadRusage() time.Duration {
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(windows.CurrentThread(), &c, &e, &k, &u); err != nil {
		panic(err)
	}
	ticks := func(f windows.Filetime) time.Duration {
		return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
	}
	return ticks(k) + ticks(u)
}

// burnCPU spins in user mode until the calling thread has used d of CPU
// time, as its own clock says.
func burnCPU(d time.Duration) {
	start := threadRusage()
	x := 1.0
	for threadRusage()-start < d {
		for i := range 10000 {
			x = x*1.0000001 + float64(i)
		}
	}
	sink = x
}

var sink float64

// mustOpenProcess opens a handle the test closes when it ends.
func mustOpenProcess(t testing.TB, pid int) *cputime.Process {
	t.Helper()
	h, err := cputime.OpenProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mustOpenThread opens a handle the test closes when it ends.
func mustOpenThread(t testing.TB, tid int) *cputime.Thread {
	t.Helper()
	h, err := cputime.OpenThread(tid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
