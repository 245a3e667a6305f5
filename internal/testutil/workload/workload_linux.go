// Package workload is the child process of the sampler's and top's tests:
// a process with a chosen number of idle threads and, on request, one
// thread that spins for a known amount of CPU time. A test binary becomes
// the workload when its TestMain calls Main and the environment asks for
// it (Env); tests start it with Command.
package workload

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Env is the environment variable that turns a test binary into the
// workload: "idle N" (N idle threads), "spin N" (N idle threads and one
// that spins until stdin closes), "yield N" (the same, the one calling
// sched_yield in a loop), "burn N MS" (N idle threads; on each line
// of stdin one thread spins for MS ms of its own CPU time, then prints the
// thread's id and its CPU time in ns before and after), "heavy N MB"
// (N idle threads and MB MiB of memory touched, so that the exit's
// address-space teardown takes milliseconds; exits when stdin closes).
//
// Two modes change the process's shape under a sampler:
//
//	leaderexit N    prints "ready SPINNER MAIN" (thread ids), one thread
//	                spinning; on the first line of stdin prints "exiting"
//	                and the main thread exits alone (SYS_EXIT, not
//	                exit_group): /proc/PID/stat then says Z while the
//	                spinner runs on, until stdin closes (exit_group)
//	threadexec N MS a thread other than the main one burns MS ms of its
//	                own CPU clock, prints "spun TID" and spins on; on the
//	                first line of stdin it calls execve of this program
//	                as "spin 0", so the kernel gives it the main thread's
//	                id (the new image prints "ready TID")
//	tids N          on "new", a goroutine locks itself to a thread and
//	                prints "tid TID" (a new thread where the runtime had
//	                none idle: the main goroutine spins meanwhile, so the
//	                goroutine needs another); on "end TID", that goroutine
//	                returns and its thread exits, then it prints "ended"
const Env = "CPUTIME_WORKLOAD"

// The main goroutine runs the package inits on the main thread; locking it
// here keeps it there, so that the modes which need the process's first
// thread have it, and (tids) no other goroutine locks itself to the main
// thread, which the runtime never lets exit.
func init() {
	if m := os.Getenv(Env); strings.HasPrefix(m, "leaderexit") || strings.HasPrefix(m, "threadexec") || strings.HasPrefix(m, "tids") {
		runtime.LockOSThread()
	}
}

// Command returns the test binary started as the workload.
func Command(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Under the race detector a program sleeps a second at exit (to let
	// other threads report races): the tests time exits, so not here.
	cmd.Env = append(os.Environ(), Env+"="+mode, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

// Main runs the workload if the environment asks for it (and then exits);
// otherwise it returns at once.
func Main() {
	mode := os.Getenv(Env)
	if mode == "" {
		return
	}
	var kind string
	var n, ms int
	fmt.Sscan(mode, &kind, &n, &ms)
	runtime.GOMAXPROCS(2)
	debug.SetMaxThreads(max(10000, 2*n))
	ready := make(chan int, n)
	for range n {
		go func() {
			runtime.LockOSThread()
			ready <- unix.Gettid()
			select {}
		}()
	}
	for range n {
		<-ready
	}
	in := bufio.NewScanner(os.Stdin)
	switch kind {
	case "leaderexit":
		tid := make(chan int)
		go func() {
			runtime.LockOSThread()
			tid <- unix.Gettid()
			for {
			}
		}()
		fmt.Println("ready", <-tid, unix.Gettid())
		in.Scan()
		go func() {
			for in.Scan() {
			}
			os.Exit(0)
		}()
		fmt.Println("exiting")
		unix.Syscall(unix.SYS_EXIT, 0, 0, 0) // this thread alone
	case "tids":
		ends := map[int64]chan struct{}{}
		pidfds := map[int64]int{} // a thread pidfd each: its exit, even if the runtime takes the tid again
		for in.Scan() {
			var id int64
			switch line := in.Text(); {
			case line == "new":
				var tid atomic.Int64
				end := make(chan struct{})
				go func() {
					runtime.LockOSThread() // never unlocked: the thread exits with it
					tid.Store(int64(unix.Gettid()))
					<-end
				}()
				for tid.Load() == 0 {
				}
				ends[tid.Load()] = end
				if fd, err := unix.PidfdOpen(int(tid.Load()), unix.O_EXCL); err == nil { // PIDFD_THREAD
					pidfds[tid.Load()] = fd
				}
				fmt.Println("tid", tid.Load())
			case strings.HasPrefix(line, "end ") && func() bool { _, err := fmt.Sscan(line[4:], &id); return err == nil }():
				close(ends[id])
				said := "stuck"
				if fd, ok := pidfds[id]; ok {
					// The runtime's preemption signals interrupt the poll
					// (EINTR): wait again, to the same deadline.
					p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
					for end := time.Now().Add(5 * time.Second); ; {
						// Never a negative timeout: poll would block for good.
						n, err := unix.Poll(p, int(max(time.Until(end), 0).Milliseconds()))
						if n == 1 {
							said = "ended"
						}
						if err != unix.EINTR || !time.Now().Before(end) {
							break
						}
					}
					unix.Close(fd)
					delete(pidfds, id)
				} else {
					for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
						if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", id)); err != nil {
							said = "ended"
							break
						}
					}
				}
				fmt.Println(said)
			}
		}
		os.Exit(0)
	case "threadexec":
		var exec atomic.Bool
		go func() {
			runtime.LockOSThread()
			start := clock(unix.CLOCK_THREAD_CPUTIME_ID)
			for clock(unix.CLOCK_THREAD_CPUTIME_ID)-start < time.Duration(ms)*time.Millisecond {
			}
			fmt.Println("spun", unix.Gettid())
			for !exec.Load() {
			}
			env := []string{Env + "=spin 0"} // the first value of a name wins
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, Env+"=") {
					env = append(env, kv)
				}
			}
			unix.Exec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, env)
			os.Exit(92)
		}()
		in.Scan()
		exec.Store(true)
		select {}
	case "idle":
		fmt.Println("ready")
	case "heavy":
		// ms MiB touched, so that the exit's address-space teardown takes
		// milliseconds.
		mem, err := unix.Mmap(-1, 0, ms<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		fmt.Println("ready")
	case "spin":
		go func() {
			runtime.LockOSThread()
			fmt.Println("ready", unix.Gettid())
			for {
			}
		}()
	case "yield":
		// A thread that runs all the time and enters the scheduler all the
		// time: its run time (and its process's) is brought up to date at
		// every yield, where a spinner's moves only at the scheduler tick.
		go func() {
			runtime.LockOSThread()
			fmt.Println("ready", unix.Gettid())
			for {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}()
	case "burn":
		fmt.Println("ready")
		done := make(chan string)
		for in.Scan() {
			go func() {
				runtime.LockOSThread()
				start := clock(unix.CLOCK_THREAD_CPUTIME_ID)
				for clock(unix.CLOCK_THREAD_CPUTIME_ID)-start < time.Duration(ms)*time.Millisecond {
				}
				done <- strconv.Itoa(unix.Gettid()) + " " + strconv.FormatInt(int64(start), 10) + " " + strconv.FormatInt(int64(clock(unix.CLOCK_THREAD_CPUTIME_ID)), 10)
				select {} // keep the thread, idle
			}()
			fmt.Println(<-done)
		}
		os.Exit(0)
	}
	for in.Scan() {
	}
	os.Exit(0)
}
