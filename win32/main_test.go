package win32_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/win32"
)

// The test binary doubles as the child process of the tests: with
// WIN32_TEST_CHILD set, TestMain runs the child's behaviour instead of the
// tests.
const childEnvVar = "WIN32_TEST_CHILD"

// testMainStart lies after this process was created.
var testMainStart time.Time

// mainThreadID is the thread that ran the package's init functions: the
// process's first thread, which the Go runtime never lets exit.
var mainThreadID = win32.GetCurrentThreadId()

func TestMain(m *testing.M) {
	testMainStart = time.Now()
	if mode := os.Getenv(childEnvVar); mode != "" {
		runTestChild(mode)
		return
	}
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// runTestChild: "burn:D" spins for D of wall time, then says "ready" and
// waits for stdin to close before it exits.
func runTestChild(mode string) {
	kind, arg, _ := strings.Cut(mode, ":")
	if kind == "burn" {
		d, err := time.ParseDuration(arg)
		if err != nil {
			panic(err)
		}
		spinFor(d)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// spinFor keeps the calling thread busy in user mode for d of wall time.
func spinFor(d time.Duration) {
	x := 1.0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10000 {
			x = x*1.0000001 + float64(i)
		}
	}
	spinSink = x
}

var spinSink float64

// testChild is a running copy of the test binary.
type testChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// before lies before the process was created, after after.
	before, after time.Time
}

func startTestChild(t *testing.T, mode string) *testChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnvVar+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &testChild{cmd: cmd, stdin: stdin, before: time.Now()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.after = time.Now()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		t.Fatalf("child %q said %q, %v", mode, line, err)
	}
	return c
}

func (c *testChild) pid() uint32 { return uint32(c.cmd.Process.Pid) }

// taskTimes is the answer of GetProcessTimes or GetThreadTimes in Go types.
type taskTimes struct {
	creation, exit time.Time // exit: the zero Time for FILETIME 0
	kernel, user   time.Duration
}

func (tt taskTimes) total() time.Duration { return tt.kernel + tt.user }

func decodeTimes(t *testing.T, creation, exit, kernel, user win32.Filetime) taskTimes {
	t.Helper()
	var tt taskTimes
	tt.creation = cputime.FiletimeFromParts(creation.LowDateTime, creation.HighDateTime).Time()
	if exit != (win32.Filetime{}) {
		tt.exit = cputime.FiletimeFromParts(exit.LowDateTime, exit.HighDateTime).Time()
	}
	var err error
	if tt.kernel, err = cputime.TicksFromParts(kernel.LowDateTime, kernel.HighDateTime).Duration(); err != nil {
		t.Fatal(err)
	}
	if tt.user, err = cputime.TicksFromParts(user.LowDateTime, user.HighDateTime).Duration(); err != nil {
		t.Fatal(err)
	}
	return tt
}

func processTimes(t *testing.T, h win32.Handle) taskTimes {
	t.Helper()
	var c, e, k, u win32.Filetime
	if err := win32.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
		t.Fatalf("GetProcessTimes(%#x): %v", h, err)
	}
	return decodeTimes(t, c, e, k, u)
}

func threadTimes(t *testing.T, h win32.Handle) taskTimes {
	t.Helper()
	var c, e, k, u win32.Filetime
	if err := win32.GetThreadTimes(h, &c, &e, &k, &u); err != nil {
		t.Fatalf("GetThreadTimes(%#x): %v", h, err)
	}
	return decodeTimes(t, c, e, k, u)
}

// opened returns a function that checks the result of an open call, fails
// the test on error, and closes the handle when the test ends:
// opened(t)(win32.OpenProcess(...)).
func opened(t *testing.T) func(win32.Handle, error) win32.Handle {
	return func(h win32.Handle, err error) win32.Handle {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := win32.CloseHandle(h); err != nil {
				t.Errorf("CloseHandle(%#x): %v", h, err)
			}
		})
		return h
	}
}

// timeSlack covers the rounding of the times compared: Linux rounds
// creation times to half a 10 ms tick, and Windows counts times in timer
// ticks (Wine: 10 ms; Windows: 15.6 ms by default).
const timeSlack = 20 * time.Millisecond

// checkBetween fails unless lo - timeSlack <= at <= hi + timeSlack.
func checkBetween(t *testing.T, what string, at, lo, hi time.Time) {
	t.Helper()
	if at.Before(lo.Add(-timeSlack)) || at.After(hi.Add(timeSlack)) {
		t.Errorf("%s %s not within [%s, %s] (±%v)", what, at.Format(time.RFC3339Nano),
			lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano), timeSlack)
	}
}

// skipIfNotImplemented skips on platforms where cputime has no backend.
func skipIfNotImplemented(t *testing.T, err error) {
	t.Helper()
	if err == win32.ERROR_CALL_NOT_IMPLEMENTED {
		t.Skipf("not implemented on %s: %v", runtime.GOOS, err)
	}
}

func skipOnWine(t *testing.T, why string) {
	t.Helper()
	if runningOnWine() {
		t.Skip("under Wine: " + why)
	}
}
