package cputime_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the child process of the tests: with
// CPUTIME_TEST_CHILD set, TestMain runs one of these behaviours instead of
// the tests, prints "ready <tid>" and waits until its stdin is closed.
const childEnv = "CPUTIME_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode)
		return
	}
	// Under the race detector every process sleeps a second at exit to let
	// reports finish: not our children, which the tests start by dozens.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
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
	case "spin": // burn CPU on a thread until stdin closes, and report it
		ready := make(chan int)
		go func() {
			runtime.LockOSThread()
			ready <- gettidForChild()
			for {
				burnCPU(time.Millisecond)
				readZero(4 << 20) // kernel time: the kernel clears 4 MiB
			}
		}()
		fmt.Printf("ready %d\n", <-ready)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "threads": // arg threads that block, locked to their own OS threads
		n, _ := strconv.Atoi(arg)
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
	case "spinners": // arg threads that burn CPU, each locked to its own OS thread
		n, _ := strconv.Atoi(arg)
		for range n {
			go func() {
				runtime.LockOSThread()
				for {
					burnCPU(time.Millisecond)
				}
			}()
		}
	case "idle":
	case "exitstamp": // on stdin's end, print the time and exit at once
		fmt.Printf("ready %d\n", gettidForChild())
		io.Copy(io.Discard, os.Stdin)
		fmt.Printf("%d\n", time.Now().UnixNano())
		os.Exit(0)
	case "spawn": // start a grandchild in mode arg sharing our stdin; reap it
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+arg)
		cmd.Stdin = os.Stdin
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(line, "ready ") {
			panic("grandchild said " + line)
		}
		fmt.Printf("ready %d\n", cmd.Process.Pid)
		cmd.Wait()
		os.Exit(0)
	case "mixed": // arg threads that burn user and kernel time, each locked to its own OS thread
		n, _ := strconv.Atoi(arg)
		for range n {
			go func() {
				runtime.LockOSThread()
				for {
					burnCPU(time.Millisecond)
					readZero(1 << 20)
				}
			}()
		}
	case "paths": // read process arg through every path; print what each said
		readEveryPath(arg) // oneanswer_linux_test.go
		os.Exit(0)
	case "access", "hidepid":
		runAccessChild(kind, arg) // access_linux_test.go
		os.Exit(0)
	}
	fmt.Printf("ready %d\n", gettidForChild())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// readZero spends kernel time: the kernel clears the buffer.
func readZero(n int) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	f.Read(buf)
}
