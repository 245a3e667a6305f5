package workload

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Job runs one of the programs the recorder's and the command's run tests
// record, if job names one, and then exits; otherwise it returns at once.
// env is the environment variable the caller's test binary reads its job
// from: a "tree" starts its children with it.
//
//	burn:MS        burn MS ms of the process's CPU clock
//	tree           start 3 "burn:100" children, burn 20 ms, wait for them
//	orphan:C:P     start a "burn:C" child, burn P ms and exit without
//	               waiting for it: it is orphaned (lib/c/bgburn's shape)
//	threads:N:MS:K N threads, K at a time, each burning MS ms of its own
//	               CPU clock, printing "TID NS BORN DONE SWITCHES" (its
//	               clock at the end; the wall clock, Unix ns, when the
//	               goroutine first ran on it and when it was done; its
//	               context switches, voluntary and not, from RUSAGE_THREAD
//	               at the end), and exiting
//	mixed:N:MS     N threads at once, each alternating 200 µs of user-mode
//	               spinning with reads of /dev/zero (kernel mode) until
//	               its clock reaches MS ms, then printing "TID USER_NS
//	               KERNEL_NS" from RUSAGE_THREAD (the kernel's own split of
//	               its exact time)
//	hold:MIB       map MIB MiB of anonymous memory and touch every page,
//	               print the memory line of its /proc/self/cgroup, then
//	               hold it until its stdin ends
//	memtree:N:MIB:MS start N "hold:MIB" children, wait until every one
//	               holds its memory, hold them together MS ms more, then
//	               let them go and wait for them
func Job(job, env string) {
	var n, ms, k, mib int
	switch {
	case scan(job, "hold:%d", &mib):
		hold(mib)
	case scan(job, "memtree:%d:%d:%d", &n, &mib, &ms):
		memTree(env, n, mib, time.Duration(ms)*time.Millisecond)
	case job == "tree":
		var kids []*exec.Cmd
		for range 3 {
			c := exec.Command(os.Args[0], "-test.run=^$")
			c.Env = append(os.Environ(), env+"=burn:100", "GORACE=atexit_sleep_ms=0")
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			if c.Start() != nil {
				os.Exit(90)
			}
			kids = append(kids, c)
		}
		burn(unix.CLOCK_PROCESS_CPUTIME_ID, 20*time.Millisecond)
		for _, c := range kids {
			if c.Wait() != nil {
				os.Exit(91)
			}
		}
	case scan(job, "orphan:%d:%d", &n, &ms):
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), fmt.Sprintf("%s=burn:%d", env, n), "GORACE=atexit_sleep_ms=0")
		if c.Start() != nil {
			os.Exit(90)
		}
		burn(unix.CLOCK_PROCESS_CPUTIME_ID, time.Duration(ms)*time.Millisecond)
	case scan(job, "burn:%d", &ms):
		burn(unix.CLOCK_PROCESS_CPUTIME_ID, time.Duration(ms)*time.Millisecond)
	case scan(job, "threads:%d:%d:%d", &n, &ms, &k):
		debug.SetMaxThreads(10000)
		sem := make(chan struct{}, k)
		var wg sync.WaitGroup
		// Each thread stores its figures and returns: after its last look
		// at its clock it only exits (no lock, no write to wait for).
		type figures struct{ tid, end, born, done, switches int64 }
		res := make([]figures, n)
		for i := range n {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// Locked and never unlocked: the thread exits with the
				// goroutine.
				runtime.LockOSThread()
				born := time.Now()
				start := clock(unix.CLOCK_THREAD_CPUTIME_ID)
				burn(unix.CLOCK_THREAD_CPUTIME_ID, start+time.Duration(ms)*time.Millisecond)
				end := clock(unix.CLOCK_THREAD_CPUTIME_ID)
				var ru unix.Rusage
				unix.Getrusage(unix.RUSAGE_THREAD, &ru)
				res[i] = figures{int64(unix.Gettid()), int64(end), born.UnixNano(), time.Now().UnixNano(), int64(ru.Nvcsw + ru.Nivcsw)}
			}()
		}
		wg.Wait()
		for _, f := range res {
			fmt.Println(f.tid, f.end, f.born, f.done, f.switches)
		}
	case scan(job, "mixed:%d:%d", &n, &ms):
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range n {
			wg.Go(func() {
				runtime.LockOSThread()
				f, err := os.Open("/dev/zero")
				if err != nil {
					os.Exit(93)
				}
				buf := make([]byte, 64<<10)
				for clock(unix.CLOCK_THREAD_CPUTIME_ID) < time.Duration(ms)*time.Millisecond {
					burn(unix.CLOCK_THREAD_CPUTIME_ID, clock(unix.CLOCK_THREAD_CPUTIME_ID)+200*time.Microsecond)
					for range 8 {
						f.Read(buf)
					}
				}
				var ru unix.Rusage
				unix.Getrusage(unix.RUSAGE_THREAD, &ru)
				mu.Lock()
				fmt.Println(unix.Gettid(), ru.Utime.Nano(), ru.Stime.Nano())
				mu.Unlock()
			})
		}
		wg.Wait()
	default:
		return
	}
	os.Exit(0)
}

func scan(s, format string, args ...any) bool {
	_, err := fmt.Sscanf(s, format, args...)
	return err == nil
}

func clock(id int32) time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(id, &ts)
	return time.Duration(ts.Nano())
}

// burn spins until the clock id reaches until.
func burn(id int32, until time.Duration) {
	for clock(id) < until {
	}
}

// hold is the "hold:MIB" job.
func hold(mib int) {
	b, err := unix.Mmap(-1, 0, mib<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		os.Exit(94)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	line := "none"
	for _, l := range strings.Split(string(cg), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && (f[1] == "" && line == "none" || slices.Contains(strings.Split(f[1], ","), "memory")) {
			line = l
		}
	}
	fmt.Println(line)
	io.Copy(io.Discard, os.Stdin)
	runtime.KeepAlive(b)
}

// memTree is the "memtree:N:MIB:MS" job: its children's lines go to its
// stdout once every one holds its memory.
func memTree(env string, n, mib int, d time.Duration) {
	var kids []*exec.Cmd
	var ins []io.WriteCloser
	var lines []string
	for range n {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), env+"=hold:"+strconv.Itoa(mib), "GORACE=atexit_sleep_ms=0")
		c.Stderr = os.Stderr
		in, err1 := c.StdinPipe()
		out, err2 := c.StdoutPipe()
		if err1 != nil || err2 != nil || c.Start() != nil {
			os.Exit(90)
		}
		kids, ins = append(kids, c), append(ins, in)
		l, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			os.Exit(95)
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	time.Sleep(d)
	for i, c := range kids {
		ins[i].Close()
		if c.Wait() != nil {
			os.Exit(91)
		}
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}
