package cputime_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

func refFreq(t testing.TB) cputime.CycleFrequency {
	t.Helper()
	f, err := cputime.ReferenceFrequency()
	if errors.Is(err, cputime.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The kernel measures or reads the TSC frequency at boot and says so in its
// log; its figure is independent of ours (its own calibration, or a
// hypervisor's statement only it can read), to the kHz.
func TestReferenceFrequencyAgainstKernelLog(t *testing.T) {
	f := refFreq(t)
	if runtime.GOARCH != "amd64" {
		t.Skipf("the kernel logs the TSC frequency on x86 only; %s", f)
	}
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		t.Skipf("dmesg unreadable: %v", err)
	}
	// The refined calibration, if any, supersedes the first figure.
	var mhz float64
	re := regexp.MustCompile(`tsc: (?:Detected|Refined TSC clocksource calibration:) ([0-9.]+) MHz`)
	for _, m := range re.FindAllSubmatch(out, -1) {
		mhz, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if mhz == 0 {
		t.Skip("no TSC frequency in the kernel log (rotated out?)")
	}
	kernel := mhz * 1e6
	if d := (float64(f.Hz) - kernel) / kernel; d > 1e-4 || d < -1e-4 {
		t.Errorf("reference frequency %s; the kernel says %.3f MHz: relative difference %.2g", f, mhz, d)
	}
	t.Logf("%s; kernel %.3f MHz", f, mhz)
}

// cycles ÷ on-CPU nanoseconds is the reference frequency, within 0.1 %, for
// a busy thread, with the on-CPU time from getrusage(RUSAGE_THREAD): the
// kernel's exact total, to the microsecond, read independently.
//
// getrusage(RUSAGE_THREAD) reads the thread's runtime as last folded in by
// the scheduler (at a tick, a switch, or a CPU-clock read), not the part run
// since; the CPU clock folds it in first. A clock_gettime of the thread's CPU
// clock (the kernel's, through x/sys, not ours) just before each getrusage
// makes the two see the same total. The cycle reads bracket the getrusage
// ones, so the cycle delta can only be larger: the lower bound holds on every
// try; the upper one may be missed when a signal handler or an interrupt
// lands inside the bracket, so it gets three tries.
func TestThreadCycleTimeBusy(t *testing.T) {
	f := refFreq(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := mustOpenThread(t, unix.Gettid())
	// No subtests: they would run on other goroutines, off this thread.
	for _, tc := range []struct {
		name string
		read func() (uint64, error)
	}{
		{"pseudo", cputime.CurrentThread().CycleTime},
		{"handle", h.CycleTime},
	} {
		busyRatio(t, tc.name, f, tc.read, func() time.Duration {
			foldRuntime(t, unix.CLOCK_THREAD_CPUTIME_ID)
			return threadRusage()
		})
	}
}

// The same for the calling process, against getrusage(RUSAGE_SELF), while
// this goroutine burns CPU (other goroutines of the test binary barely run).
func TestProcessCycleTimeBusy(t *testing.T) {
	f := refFreq(t)
	runtime.LockOSThread() // burnCPU measures this thread's time
	defer runtime.UnlockOSThread()
	busyRatio(t, "process", f, cputime.CurrentProcess().CycleTime, func() time.Duration {
		foldRuntime(t, unix.CLOCK_PROCESS_CPUTIME_ID)
		u, s := rusage(unix.RUSAGE_SELF)
		return u + s
	})
}

// busyRatio checks cycles ÷ on-CPU time ÷ the reference frequency against
// 1 ± 0.1 % around 200 ms of burnt CPU, as the two tests above say.
func busyRatio(t *testing.T, name string, f cputime.CycleFrequency, read func() (uint64, error), onCPU func() time.Duration) {
	t.Helper()
	var msgs []string
	for try := range 3 {
		c1 := mustCycles(t, read)
		r1 := onCPU()
		burnCPU(200 * time.Millisecond)
		r2 := onCPU()
		c2 := mustCycles(t, read)
		sec := (r2 - r1).Seconds()
		ratio := float64(c2-c1) / sec / float64(f.Hz)
		msg := fmt.Sprintf("%s, try %d: %d cycles in %.6f s of on-CPU time: %.0f Hz, reference %s (ratio %.6f)", name, try+1, c2-c1, sec, float64(c2-c1)/sec, f, ratio)
		if ratio < 1-1e-3 {
			t.Fatalf("%s: fewer cycles than the on-CPU time bracketed by the reads allows", msg)
		}
		if ratio <= 1+1e-3 {
			if try > 0 {
				t.Logf("%s (after: %s)", msg, strings.Join(msgs, "; "))
			}
			return
		}
		msgs = append(msgs, msg)
	}
	t.Errorf("more cycles than the on-CPU time allows, in three tries: %s", strings.Join(msgs, "; "))
}

// foldRuntime reads a CPU clock with clock_gettime, which makes the kernel
// fold the running thread's pending runtime into its total.
func foldRuntime(t testing.TB, clock int32) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		t.Fatal(err)
	}
}

func mustCycles(t testing.TB, read func() (uint64, error)) uint64 {
	t.Helper()
	c, err := read()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Cycle times agree with Times: between two reads of Times, the cycle time
// lies between the cycles of the two totals. Covers every way a handle
// reads its task: pseudo-handles, own threads, another process, another
// process's busy thread (schedstat).
func TestCycleTimeAgreesWithTimes(t *testing.T) {
	f := refFreq(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := startChild(t, "spin")
	own := mustOpenThread(t, unix.Gettid())
	proc := mustOpenProcess(t, c.pid())
	thr := mustOpenThread(t, c.tid)
	for _, tc := range []struct {
		name  string
		times func() (cputime.Times, error)
		cyc   func() (uint64, error)
	}{
		{"current process", cputime.CurrentProcess().Times, cputime.CurrentProcess().CycleTime},
		{"current thread", cputime.CurrentThread().Times, cputime.CurrentThread().CycleTime},
		{"own thread", own.Times, own.CycleTime},
		{"other process", proc.Times, proc.CycleTime},
		{"other thread", thr.Times, thr.CycleTime},
	} {
		for range 100 {
			t1, err := tc.times()
			if err != nil {
				t.Fatal(err)
			}
			cyc := mustCycles(t, tc.cyc)
			t2, err := tc.times()
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := f.Cycles(t1.Total()), f.Cycles(t2.Total()); cyc < lo || cyc > hi {
				t.Fatalf("%s: cycle time %d outside [%d, %d], the cycles of Times %v and %v", tc.name, cyc, lo, hi, t1.Total(), t2.Total())
			}
		}
	}
}

// Cycle times never decrease, across 10,000 reads of each kind of handle,
// with their tasks busy.
func TestCycleTimeMonotonic(t *testing.T) {
	refFreq(t)
	c := startChild(t, "spin")
	proc := mustOpenProcess(t, c.pid())
	thr := mustOpenThread(t, c.tid)
	for _, tc := range []struct {
		name string
		read func() (uint64, error)
	}{
		{"current process", cputime.CurrentProcess().CycleTime},
		{"current thread", cputime.CurrentThread().CycleTime},
		{"other process", proc.CycleTime},
		{"other thread", thr.CycleTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			last := uint64(0)
			for i := range 10000 {
				c := mustCycles(t, tc.read)
				if c < last {
					t.Fatalf("read %d: %d cycles after %d", i, c, last)
				}
				last = c
			}
			if last == 0 {
				t.Errorf("no cycles at all")
			}
		})
	}
}

// A process's cycle time is at least the sum of its live threads': a child
// with four spinning threads, threads read first, the process after.
func TestProcessCycleTimeCoversThreads(t *testing.T) {
	f := refFreq(t)
	c := startChild(t, "spinners:4")
	time.Sleep(100 * time.Millisecond) // let them spin
	var sum uint64
	n := 0
	for tid := range listTasks(t, c.pid()) {
		cyc, err := cputime.ThreadCycleTime(tid)
		if errors.Is(err, cputime.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sum += cyc
		n++
	}
	p := mustCycles(t, func() (uint64, error) { return cputime.ProcessCycleTime(c.pid()) })
	if p < sum {
		t.Errorf("process %d cycles < %d, the sum over its %d threads", p, sum, n)
	}
	// And the process total is the kernel's, as its stat file counts it in
	// whole ticks (read after: it can only be larger, by what ran since,
	// less than one tick per thread of truncation).
	st := procStat(t, c.pid())
	ticks := time.Duration(st.utime+st.stime) * 10 * time.Millisecond
	if f.Cycles(ticks) > p+f.Cycles(time.Duration(n+1)*10*time.Millisecond)+f.Cycles(time.Second) {
		t.Errorf("process %d cycles, but stat says %v on CPU (%d cycles)", p, ticks, f.Cycles(ticks))
	}
}

// A process's cycle time includes its exited threads: a thread of this
// process burns CPU and exits; the process's cycles then exceed the sum
// over its live threads by at least what it burned.
func TestProcessCycleTimeIncludesExitedThreads(t *testing.T) {
	f := refFreq(t)
	_, burned := exitedThread(t, 150*time.Millisecond)
	var live uint64
	for tid := range listTasks(t, os.Getpid()) {
		cyc, err := cputime.ThreadCycleTime(tid)
		if errors.Is(err, cputime.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		live += cyc
	}
	p := mustCycles(t, cputime.CurrentProcess().CycleTime)
	if p < live+f.Cycles(burned)*99/100 {
		t.Errorf("process %d cycles, live threads %d: the exited thread's %v (%d cycles) are missing", p, live, burned, f.Cycles(burned))
	}
}

func TestCycleTimeErrors(t *testing.T) {
	refFreq(t)
	for _, tc := range []struct {
		name string
		read func() (uint64, error)
		want error
	}{
		{"pid 0", func() (uint64, error) { return cputime.ProcessCycleTime(0) }, cputime.ErrInvalidArgument},
		{"tid -1", func() (uint64, error) { return cputime.ThreadCycleTime(-1) }, cputime.ErrInvalidArgument},
		{"no such pid", func() (uint64, error) { return cputime.ProcessCycleTime(1<<22 + 1) }, cputime.ErrNotFound},
		{"no such tid", func() (uint64, error) { return cputime.ThreadCycleTime(1<<22 + 1) }, cputime.ErrNotFound},
	} {
		if _, err := tc.read(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// Closed handles.
	p, err := cputime.OpenProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.CycleTime(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("closed process: %v", err)
	}
	c := startChild(t, "threads:2")
	for _, tid := range []int{unix.Gettid(), c.tid} {
		h, err := cputime.OpenThread(tid)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		if _, err := h.CycleTime(); !errors.Is(err, cputime.ErrClosed) {
			t.Errorf("closed thread %d: %v", tid, err)
		}
	}

	// Exited tasks: a child's process and thread, and a thread of ours. As
	// on Windows, their handles go on answering with the final count, which
	// agrees with their final times.
	ph := mustOpenProcess(t, c.pid())
	th := mustOpenThread(t, c.tid)
	c.stop()
	checkFinalCycles(t, "exited process", ph.CycleTime, ph.Times)
	checkFinalCycles(t, "exited thread of another process", th.CycleTime, th.Times)
	// A thread of ours burns CPU, and its handle reads its cycle time
	// before it exits: the kernel frees a thread's accounting at once, and
	// the final count must not fall below what was reported.
	opened := make(chan *cputime.Thread, 1)
	var seen uint64
	exitedThread(t, 0, func() {
		h, err := cputime.OpenThread(unix.Gettid())
		if err != nil {
			panic(err)
		}
		burnCPU(20 * time.Millisecond)
		if seen, err = h.CycleTime(); err != nil {
			panic(err)
		}
		opened <- h
	})
	own := <-opened
	defer own.Close()
	final := checkFinalCycles(t, "exited thread of this process", own.CycleTime, own.Times)
	if final < seen || seen == 0 {
		t.Errorf("exited thread of this process: %d cycles before it exited, %d after", seen, final)
	}
}

func checkFinalCycles(t *testing.T, what string, cycles func() (uint64, error), times func() (cputime.Times, error)) uint64 {
	t.Helper()
	c1, err1 := cycles()
	tm, err2 := times()
	c2, err3 := cycles()
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	f, err := cputime.ReferenceFrequency()
	if err != nil {
		t.Fatal(err)
	}
	if tm.Exit.IsZero() || c1 != c2 || c1 != f.Cycles(tm.Total()) {
		t.Errorf("%s: cycles %d then %d; final times %+v make %d", what, c1, c2, tm, f.Cycles(tm.Total()))
	}
	return c1
}

// exitedThread runs burn of CPU, then the optional hooks, on a thread of
// its own, lets the thread exit, and returns once it has left /proc/self/task,
// with its tid and its on-CPU time from getrusage. A goroutine that exits
// locked ends its thread, except the main thread, which Go keeps (wedged):
// a goroutine that lands on the main thread holds it until the end, and
// the attempt is repeated.
func exitedThread(t *testing.T, burn time.Duration, hooks ...func()) (tid int, burned time.Duration) {
	t.Helper()
	type result struct {
		tid    int
		burned time.Duration
	}
	// Locked, this goroutine keeps its thread (the main one, often) to
	// itself, so the new goroutine starts on another.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	release := make(chan struct{})
	defer close(release)
	for range 10 {
		done := make(chan result)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == os.Getpid() {
				// Hold the main thread until the end, so that the next
				// goroutine cannot land on it.
				done <- result{}
				<-release
				runtime.UnlockOSThread()
				return
			}
			burnCPU(burn)
			for _, h := range hooks {
				h()
			}
			done <- result{unix.Gettid(), threadRusage()}
			// Return locked: the thread exits.
		}()
		r := <-done
		if r.tid == 0 {
			continue
		}
		for deadline := time.Now().Add(10 * time.Second); listTasks(t, os.Getpid())[r.tid]; {
			if time.Now().After(deadline) {
				t.Fatalf("thread %d did not exit", r.tid)
			}
			time.Sleep(time.Millisecond)
		}
		return r.tid, r.burned
	}
	t.Fatal("every goroutine ran on the main thread")
	return 0, 0
}

// cpuList reads a kernel CPU list file ("0-3,8") into 1 + its highest CPU.
func cpuList(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/" + name)
	if err != nil {
		t.Skip(err)
	}
	highest := -1
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		if i := strings.LastIndexByte(r, '-'); i >= 0 {
			r = r[i+1:]
		}
		n, err := strconv.Atoi(r)
		if err != nil {
			t.Fatalf("%s: %q", name, b)
		}
		highest = max(highest, n)
	}
	return highest + 1
}

// procStatIdle reads each CPU's idle + iowait from /proc/stat directly, in
// nanoseconds (USER_HZ = 100 on every architecture Go supports).
func procStatIdle(t *testing.T) map[int]time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]time.Duration{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, _ := strconv.Atoi(f[0][3:])
		idle, _ := strconv.ParseUint(f[4], 10, 64)
		iowait, _ := strconv.ParseUint(f[5], 10, 64)
		m[cpu] = time.Duration(idle+iowait) * 10 * time.Millisecond
	}
	return m
}

// Idle cycles: one value per present CPU, and at every read, for every
// online CPU, between /proc/stat's idle + iowait (read directly) just
// before, less one tick, and /proc/stat's just after: so never behind by a
// sleep in progress, which the cpuidle residency alone would be (seconds,
// on an idle machine). They never decrease, and over a second they grow by
// no more than the wall time's cycles per CPU.
func TestIdleProcessorCycleTimes(t *testing.T) {
	f := refFreq(t)
	present := cpuList(t, "present")
	// Cycles back to ns, rounding up: the value was rounded down from ns.
	nanos := func(c uint64) time.Duration {
		return time.Duration(math.Ceil(float64(c) / float64(f.Hz) * 1e9))
	}
	const tick = 10 * time.Millisecond
	var first, prev []uint64
	wall0 := time.Now()
	for i := range 21 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond) // let the CPUs fall asleep
		}
		before := procStatIdle(t)
		idle, err := cputime.IdleProcessorCycleTimes()
		if err != nil {
			t.Fatal(err)
		}
		after := procStatIdle(t)
		if len(idle) != present {
			t.Fatalf("%d values, %d CPUs present", len(idle), present)
		}
		for cpu, b := range before {
			a, ok := after[cpu]
			if !ok {
				continue // went offline meanwhile
			}
			// One cycle of rounding either way on top of the bounds.
			got := nanos(idle[cpu])
			if got < b-tick-time.Microsecond || got > a+time.Microsecond {
				t.Errorf("read %d, CPU %d: idle cycles %d are %v; /proc/stat says %v before, %v after", i, cpu, idle[cpu], got, b, a)
			}
		}
		for cpu := range prev {
			if idle[cpu] < prev[cpu] {
				t.Errorf("read %d, CPU %d: idle cycles went from %d to %d", i, cpu, prev[cpu], idle[cpu])
			}
		}
		if first == nil {
			first = idle
		}
		prev = idle
	}
	wall := time.Since(wall0)
	for cpu := range prev {
		d := prev[cpu] - first[cpu]
		if limit := f.Cycles(wall + tick); d > limit {
			t.Errorf("CPU %d: %d idle cycles in %v of wall time (limit %d)", cpu, d, wall, limit)
		}
		t.Logf("CPU %d: idle %v in %v of wall time", cpu, nanos(d), wall)
	}
}

// A hardware cycle counter, where the machine has a PMU: skipped with the
// reason where it has none (virtual machines) or may not use it.
func TestCycleCounter(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := cputime.OpenThreadCycleCounter(unix.Gettid())
	if errors.Is(err, cputime.ErrNotSupported) || errors.Is(err, cputime.ErrAccessDenied) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := cputime.OpenProcessCycleCounter(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	burnCPU(50 * time.Millisecond)
	r1, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	burnCPU(50 * time.Millisecond)
	r2, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.Read()
	if err != nil {
		t.Fatal(err)
	}
	// 50 ms at any clock above 100 MHz is more than 5e6 cycles.
	if r1.Cycles < 5e6 || r2.Cycles < r1.Cycles+5e6 || pr.Cycles < r2.Cycles/2 {
		t.Errorf("thread counter %+v then %+v; process counter %+v", r1, r2, pr)
	}
	c.Close()
	p.Close()
	if _, err := c.Read(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
}

// Without a PMU, the error says so: this machine's state decides which
// answer is right, read from sysfs directly.
func TestCycleCounterNoPMU(t *testing.T) {
	entries, err := os.ReadDir("/sys/bus/event_source/devices")
	if err != nil {
		t.Skip(err)
	}
	for _, e := range entries {
		if e.Name() == "cpu" || strings.HasPrefix(e.Name(), "cpu_") || strings.HasPrefix(e.Name(), "armv") {
			t.Skipf("this machine has a PMU (%s)", e.Name())
		}
	}
	_, err = cputime.OpenThreadCycleCounter(unix.Gettid())
	if !errors.Is(err, cputime.ErrNotSupported) || !strings.Contains(err.Error(), "PMU") {
		t.Errorf("without a PMU: %v, want ErrNotSupported saying why", err)
	}
	if _, err := cputime.OpenProcessCycleCounter(0); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("pid 0: %v", err)
	}
}

// ProcessCycleTime by pid is one clock read (no file, no handle): it must
// say what the kernel's other interface says, the sum of the threads'
// schedstat run times for a stopped process, and what OpenProcess and
// CycleTime say, in every state: running, a thread id given for a process
// id, a zombie.
func TestProcessCycleTimeOneShot(t *testing.T) {
	f := refFreq(t)
	c := startChild(t, "spinners:2")
	stopAndSettle(t, c.pid())
	var sum uint64
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", c.pid()))
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		var run uint64
		if _, err := fmt.Sscan(string(b), &run); err != nil {
			t.Fatalf("%s: %q: %v", d, b, err)
		}
		sum += run
	}
	got, err := cputime.ProcessCycleTime(c.pid())
	if err != nil {
		t.Fatal(err)
	}
	// The process clock also holds threads that exited: the child's
	// runtime may have started and ended a few before the spinners.
	if want := f.Cycles(time.Duration(sum)); got < want || f.Cycles(time.Duration(sum)+5*time.Millisecond) < got {
		t.Errorf("ProcessCycleTime(%d) = %d; its threads' schedstat says %d (%v)", c.pid(), got, want, time.Duration(sum))
	}
	h := mustOpenProcess(t, c.pid())
	if viaHandle, err := h.CycleTime(); err != nil || viaHandle != got {
		t.Errorf("through a handle: %d, %v; one-shot: %d", viaHandle, err, got)
	}

	// A thread id that is not a process's.
	tid := 0
	for _, d := range dirs {
		if id, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); id != c.pid() {
			tid = id
		}
	}
	_, errHandle := cputime.OpenProcess(tid)
	_, errOneShot := cputime.ProcessCycleTime(tid)
	if !errors.Is(errOneShot, cputime.ErrNotFound) || !errors.Is(errHandle, cputime.ErrNotFound) {
		t.Errorf("thread id %d as a process: one-shot %v, OpenProcess %v; want ErrNotFound from both", tid, errOneShot, errHandle)
	}

	// A zombie: the final count, as the handle's final times say.
	syscall.Kill(c.pid(), syscall.SIGKILL)
	syscall.Kill(c.pid(), syscall.SIGCONT)
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, c.pid(), &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	zombie, err := cputime.ProcessCycleTime(c.pid())
	if err != nil {
		t.Fatalf("zombie: %v", err)
	}
	final, err := h.Times()
	if err != nil || final.Exit.IsZero() {
		t.Fatalf("handle of the zombie: %+v, %v", final, err)
	}
	if zombie != f.Cycles(final.Total()) {
		t.Errorf("zombie: one-shot %d cycles, the handle's final times %v (%d cycles)", zombie, final.Total(), f.Cycles(final.Total()))
	}
}
