//go:build linux || windows

package cputime_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// Test helpers shared by the Linux and Windows tests. Each system's
// TestMain and runChild (child_linux_test.go, child_windows_test.go) make
// the test binary double as the child process.

// child is a running copy of the test binary.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tid   int           // the thread that printed "ready"
	out   *bufio.Reader // the rest of its output
	// started lies before the process was created and startedAfter after
	// Start returned.
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

// burnCPU spins in user mode until the calling thread has used d of CPU
// time, as its own clock says (threadRusage: getrusage on Linux,
// GetThreadTimes read directly on Windows; never the code under test).
func burnCPU(d time.Duration) {
	start := threadRusage()
	x := 1.0
	for threadRusage()-start < d {
		for i := range 10000 {
			x = x*1.0000001 + float64(i)
		}
	}
	sink.Store(math.Float64bits(x)) // atomic: burners run on many goroutines
}

var sink atomic.Uint64

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

// FinalExact is false while a process runs and for the pseudo-handle; a
// child waited for through its handle before it is reaped has exact final
// times (Linux: its zombie's), which agree with its rusage to the µs. A
// child reaped first may or may not have been read after its exit (the
// exit watcher races the reaping): whichever FinalExact says must hold of
// the times, exact or no more than the rusage.
func TestFinalExact(t *testing.T) {
	if ok, err := cputime.CurrentProcess().FinalExact(); ok || err != nil {
		t.Errorf("CurrentProcess: %v, %v; want false, nil", ok, err)
	}
	for _, waitFirst := range []bool{true, false} {
		c := startChild(t, "burn:30ms")
		h, err := cputime.OpenProcess(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if ok, err := h.FinalExact(); ok || err != nil {
			t.Errorf("running: %v, %v; want false, nil", ok, err)
		}
		if waitFirst {
			c.stdin.Close()
			if err := h.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		st := c.stop()
		if !waitFirst {
			if err := h.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		got, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		exact, err := h.FinalExact()
		if err != nil {
			t.Fatal(err)
		}
		final := st.UserTime() + st.SystemTime()
		d := got.Total() - final // rusage is truncated to the µs
		switch {
		case waitFirst && !exact:
			t.Errorf("waited for before the reaping: FinalExact false")
		case underWine:
			// Wine answers GetProcessTimes of another process with the
			// caller's own, which grow between the two reads.
		case exact && (d < 0 || d > 2*time.Microsecond):
			t.Errorf("waitFirst %v: FinalExact, but the total %v against the rusage's %v", waitFirst, got.Total(), final)
		case !exact && d > 2*time.Microsecond:
			t.Errorf("waitFirst %v: the total %v above the rusage's %v", waitFirst, got.Total(), final)
		}
		t.Logf("waitFirst %v: FinalExact %v, total %v, rusage %v", waitFirst, exact, got.Total(), final)
	}
}
