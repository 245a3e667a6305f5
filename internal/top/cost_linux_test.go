package top_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/top"
)

// TestCostAgainstProcps runs "top -b -n 11 -d 0.1 -H -p PID" on a process
// of 1,000 idle threads with procps top and with ours, interleaved, three
// times each, and compares the CPU time each used (user + system, from
// wait4's rusage of the finished child). Ours must cost at most half.
func TestCostAgainstProcps(t *testing.T) {
	if testing.Short() {
		t.Skip("costly: -short")
	}
	if raceEnabled {
		t.Skip("the race detector slows our side only")
	}
	procps, err := exec.LookPath("top")
	if err != nil {
		t.Skip("procps top not found: install with apt-get install procps")
	}
	if v, _ := exec.Command(procps, "-V").CombinedOutput(); !strings.Contains(string(v), "procps") {
		t.Skipf("%s is not procps top: %s", procps, v)
	}
	c := startChild(t, "idle 1000")
	c.line(t)
	args := fmt.Sprintf("-b -n 11 -d 0.1 -H -p %d", c.pid)
	cost := func(cmd *exec.Cmd) time.Duration {
		cmd.Stdout = io.Discard
		cmd.Stderr = io.Discard
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var ours, theirs []time.Duration
	for range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), topEnv+"="+args)
		ours = append(ours, cost(cmd))
		p := exec.Command(procps, strings.Fields(args)...)
		p.Env = append(os.Environ(), "COLUMNS=200", "LINES=2000")
		theirs = append(theirs, cost(p))
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	t.Logf("11 refreshes of 1,000 threads, CPU time (user+system) of the whole run, 3 runs each: cputime top %v, procps top %v (medians %v vs %v, ratio %.2f)",
		ours, theirs, ours[1], theirs[1], float64(ours[1])/float64(theirs[1]))
	if 2*ours[1] > theirs[1] {
		t.Errorf("cputime top used %v, more than half of procps top's %v", ours[1], theirs[1])
	}
}

var raceEnabled bool // set in race_test.go

// BenchmarkRefresh10000 is one batch refresh of 10,000 threads: the
// sampler's refresh, the rows, sorting and the text of the frame. It
// reports the CPU time (getrusage of the benchmark's process) per refresh.
func BenchmarkRefresh10000(b *testing.B) {
	c := startChild(b, "idle 10000")
	// Ended here, not at cleanup: the next -count run starts another
	// 10,000 threads, and two such children can exhaust pid_max.
	defer func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}()
	c.line(b)
	run, done := top.BenchRefresher([]int{c.pid})
	defer done()
	run()
	run()
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	n := 0
	for b.Loop() {
		n = run()
	}
	unix.Getrusage(unix.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/refresh")
	b.ReportMetric(float64(n), "threads")
}
