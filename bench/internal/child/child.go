// Package child starts the processes the benchmarks and the accuracy report
// measure. The calling binary doubles as the child: a program calls Main
// first thing (in main or TestMain); when the environment says it was started
// as a child, Main runs the requested behaviour and never returns.
package child

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

const env = "CPUTIME_BENCH_CHILD"

// Main runs the child behaviour if this process is a child, and returns
// otherwise. A child prints "ready <tid>" on stdout once set up, where tid is
// the thread of interest (the spinning one for "spin"), and exits when its
// stdin is closed.
//
// Modes:
//   - "idle": one thread of interest, blocked reading stdin;
//   - "spin": a thread that burns CPU in user mode until stdin closes;
//   - "threads:N": N extra OS threads, each blocked on a channel (the
//     cheapest kind of thread: a parked futex wait, no CPU).
func Main() {
	mode := os.Getenv(env)
	if mode == "" {
		return
	}
	kind, arg, _ := strings.Cut(mode, ":")
	runtime.LockOSThread()
	tid := gettid()
	switch kind {
	case "idle":
	case "spin":
		ready := make(chan int)
		go func() {
			runtime.LockOSThread()
			ready <- gettid()
			Spin(nil)
		}()
		tid = <-ready
	case "threads":
		n, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		// The runtime stops the process at 10,000 threads by default.
		debug.SetMaxThreads(n + 1000)
		block := make(chan struct{})
		started := make(chan struct{})
		for range n {
			go func() {
				runtime.LockOSThread()
				started <- struct{}{}
				<-block
			}()
		}
		for range n {
			<-started
		}
	default:
		fmt.Fprintf(os.Stderr, "child: unknown mode %q\n", mode)
		os.Exit(2)
	}
	fmt.Printf("ready %d\n", tid)
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Spin burns CPU in user mode until stop is closed (forever if nil).
func Spin(stop <-chan struct{}) {
	x := 1.0
	for {
		for i := range 100000 {
			x = x*1.0000001 + float64(i)
		}
		Sink = x
		select {
		case <-stop:
			return
		default:
		}
	}
}

// Sink keeps the compiler from removing Spin's loop.
var Sink float64

// Child is a running child process.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// TID is the thread the child reported: the spinning thread for "spin",
	// the main thread otherwise.
	TID int
	// Before is the instant just before the fork; After, just after Start
	// returned.
	Before, After time.Time
}

// Start starts a copy of the running binary as a child in the given mode and
// waits until it is ready.
func Start(mode string) (*Child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, stdin: stdin}
	c.Before = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.After = time.Now()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err == nil {
		_, err = fmt.Sscanf(line, "ready %d", &c.TID)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("starting child %q: %w", mode, err)
	}
	return c, nil
}

// PID returns the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Stop closes the child's stdin and waits for it to exit.
func (c *Child) Stop() {
	c.stdin.Close()
	c.cmd.Wait()
}
