package cputime_test

import (
	"errors"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/testutil/workload"
)

// The calling thread's times against getrusage(RUSAGE_THREAD), which reports
// the kernel's own adjusted split of the same exact total in microseconds:
// ours must lie between a reading before and one after.
func TestCurrentThreadAgainstRusage(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	burnCPU(30 * time.Millisecond)
	for range 4 {
		readZero(8 << 20)
	}
	u1, s1 := rusage(unix.RUSAGE_THREAD)
	got, err := cputime.CurrentThread().Times()
	if err != nil {
		t.Fatal(err)
	}
	u2, s2 := rusage(unix.RUSAGE_THREAD)
	const trunc = 2 * time.Microsecond // rusage truncates user and system to µs
	if got.Total() < u1+s1 || got.Total() > u2+s2+trunc {
		t.Errorf("total %v outside rusage [%v, %v]", got.Total(), u1+s1, u2+s2)
	}
	// The split follows the same tick samples as the kernel's; allow a few
	// ticks of disagreement for the history each side's clamp carries.
	const slack = 20 * time.Millisecond
	if d := got.User - u2; d > slack || d < -slack {
		t.Errorf("user %v, rusage says %v..%v", got.User, u1, u2)
	}
	if d := got.Kernel - s2; d > slack || d < -slack {
		t.Errorf("kernel %v, rusage says %v..%v", got.Kernel, s1, s2)
	}
	if got.Exit != (time.Time{}) {
		t.Errorf("running thread has exit time %v", got.Exit)
	}
	if age := time.Since(got.Creation); age < 0 && age < -10*time.Millisecond {
		t.Errorf("creation %v is in the future", got.Creation)
	}
}

// The calling process against getrusage(RUSAGE_SELF).
func TestCurrentProcessAgainstRusage(t *testing.T) {
	burnCPU(20 * time.Millisecond)
	u1, s1 := rusage(unix.RUSAGE_SELF)
	got, err := cputime.CurrentProcess().Times()
	if err != nil {
		t.Fatal(err)
	}
	u2, s2 := rusage(unix.RUSAGE_SELF)
	// Other threads of this process run meanwhile, so only an ordering with
	// µs truncation and the time other threads used between the reads.
	if got.Total() < u1+s1 || got.Total() > u2+s2+100*time.Microsecond {
		t.Errorf("total %v outside rusage [%v, %v]", got.Total(), u1+s1, u2+s2)
	}
	viaPID, err := cputime.ProcessTimes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if viaPID.Total() < got.Total() {
		t.Errorf("second read %v below first %v", viaPID.Total(), got.Total())
	}
	if !viaPID.Creation.Equal(got.Creation) { // one boot offset per process
		t.Errorf("creation %v vs %v", viaPID.Creation, got.Creation)
	}
}

// Precision: a busy thread read twice 2 ms of CPU apart shows the 2 ms, not
// a multiple of the 10 ms (USER_HZ) or 4 ms (HZ=250) tick.
func TestPrecisionOwnThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := mustOpenThread(t, unix.Gettid())
	for range 3 {
		a, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		burnCPU(2 * time.Millisecond)
		b, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		d := b.Total() - a.Total()
		// burnCPU stops on getrusage, which truncates to µs: allow for it.
		if d < 2*time.Millisecond-10*time.Microsecond || d > 200*time.Millisecond {
			t.Errorf("2 ms of CPU read as %v", d)
		}
		if d%(10*time.Millisecond) == 0 || d%(4*time.Millisecond) == 0 {
			t.Errorf("increase %v is a whole number of ticks", d)
		}
	}
}

// A thread of this process that is blocked is not on a CPU, so its CPU clock
// and its schedstat agree to the nanosecond.
func TestOwnBlockedThreadAgainstSchedstat(t *testing.T) {
	tidc, stop, done := make(chan int), make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		burnCPU(5 * time.Millisecond)
		tidc <- unix.Gettid()
		<-stop
		runtime.UnlockOSThread()
	}()
	tid := <-tidc
	defer func() { close(stop); <-done }()
	time.Sleep(10 * time.Millisecond) // let it block; not a tuned bound: equality is checked below with retries
	for try := 0; ; try++ {
		before := schedstatRuntime(t, os.Getpid(), tid)
		got, err := cputime.ThreadTimes(tid)
		if err != nil {
			t.Fatal(err)
		}
		after := schedstatRuntime(t, os.Getpid(), tid)
		if before == after && got.Total() == before {
			return
		}
		if try == 50 {
			t.Fatalf("total %v, schedstat %v then %v", got.Total(), before, after)
		}
		time.Sleep(time.Millisecond)
	}
}

// A thread of another process: exact at each context switch, so it lies
// between schedstat read before and after.
func TestOtherThreadAgainstSchedstat(t *testing.T) {
	c := startChild(t, "spin")
	h := mustOpenThread(t, c.tid)
	if h.ProcessID() != c.pid() {
		t.Errorf("thread %d belongs to %d, want %d", c.tid, h.ProcessID(), c.pid())
	}
	var prev cputime.Times
	// At least 2000 reads, and on until ticks have landed in both modes.
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 2000 || ((prev.Kernel == 0 || prev.User == 0) && time.Now().Before(deadline)); i++ {
		before := schedstatRuntime(t, c.pid(), c.tid)
		got, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		after := schedstatRuntime(t, c.pid(), c.tid)
		if got.Total() < before || got.Total() > after {
			t.Fatalf("read %d: total %v outside schedstat [%v, %v]", i, got.Total(), before, after)
		}
		if got.User < prev.User || got.Kernel < prev.Kernel {
			t.Fatalf("read %d: went backwards: %+v after %+v", i, got, prev)
		}
		prev = got
	}
	if prev.Kernel == 0 || prev.User == 0 {
		t.Errorf("spinning thread doing syscalls shows %+v", prev)
	}
}

// Another process: its times while it idles match what wait4 reports for it
// at exit, and its creation time lies around the moment we started it.
func TestChildAgainstProcessState(t *testing.T) {
	c := startChild(t, "burn:150ms")
	got, err := cputime.ProcessTimes(c.pid())
	if err != nil {
		t.Fatal(err)
	}
	if readAt := time.Now(); got.Creation.After(readAt) {
		t.Errorf("creation %v is after the read at %v", got.Creation, readAt)
	}
	st := c.stop()
	final := st.UserTime() + st.SystemTime()
	// The child only exits after our read: its final total is at least ours
	// (less the µs truncation of rusage), and not far above (exit costs some).
	if got.Total() > final+2*time.Microsecond {
		t.Errorf("total %v above final %v", got.Total(), final)
	}
	if final-got.Total() > 50*time.Millisecond {
		t.Errorf("total %v far below final %v", got.Total(), final)
	}
	// The child's thread burned 150 ms of CPU by its own getrusage (µs
	// resolution); the split is tick-sampled, so only the total is exact.
	if got.Total() < 150*time.Millisecond-2*time.Microsecond || got.User < got.Kernel {
		t.Errorf("child burned 150ms, mostly in user mode: %+v", got)
	}
	// Creation is the start of the 10 ms tick of the fork, and the fork
	// happened between started and startedAfter.
	const tick = 10 * time.Millisecond
	if got.Creation.Before(c.started.Add(-tick)) || got.Creation.After(c.startedAfter.Add(time.Millisecond)) {
		t.Errorf("creation %v, started between %v and %v", got.Creation, c.started, c.startedAfter)
	}
	if _, err := cputime.ProcessTimes(c.pid()); !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("reaped child: err = %v, want ErrNotFound", err)
	}
}

// Creation is the start of the kernel's tick: never after the fork, at most
// a tick before it, for each of many children (the middle of the tick, the
// unbiased estimate cputime once gave, lies after the fork half the time).
// The fork lies between started and startedAfter; the boot offset's error
// (microseconds) is the only slack.
func TestCreationTimeIsTickStart(t *testing.T) {
	const (
		tick  = 10 * time.Millisecond
		slack = 200 * time.Microsecond
	)
	for range 20 {
		c := startChild(t, "idle")
		got, err := cputime.ProcessTimes(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		if got.Creation.After(c.startedAfter.Add(slack)) || got.Creation.Before(c.started.Add(-tick-slack)) {
			t.Errorf("creation %v; forked between %v and %v", got.Creation, c.started, c.startedAfter)
		}
		c.stop()
	}
}

// Neither part ever decreases across many reads of a busy process.
func TestMonotonicProcess(t *testing.T) {
	c := startChild(t, "spin")
	h := mustOpenProcess(t, c.pid())
	var prev cputime.Times
	for i := range 10000 {
		got, err := h.Times()
		if err != nil {
			t.Fatal(err)
		}
		if got.User < prev.User || got.Kernel < prev.Kernel {
			t.Fatalf("read %d went backwards: %+v after %+v", i, got, prev)
		}
		prev = got
	}
}

func TestThreadsAgainstProcTask(t *testing.T) {
	workload.ChurnThreads(t, 4)
	var staying []int
	for i := range 20 {
		if i%2 == 0 {
			staying = append(staying, workload.StayingThread(t))
		}
		before := listTasks(t, os.Getpid())
		var got []cputime.ThreadInfo
		for info, err := range cputime.Threads(os.Getpid()) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, info)
		}
		after := listTasks(t, os.Getpid())
		seen := map[int]bool{}
		for _, info := range got {
			seen[info.ID] = true
			if info.ProcessID != os.Getpid() || info.Name == "" || info.Times.Creation.IsZero() {
				t.Errorf("bad entry %+v", info)
			}
		}
		for tid := range before {
			if after[tid] && !seen[tid] {
				t.Errorf("thread %d listed before and after, but not by Threads", tid)
			}
		}
		for _, tid := range staying {
			if !seen[tid] {
				t.Errorf("thread %d, alive throughout, not listed by Threads", tid)
			}
		}
	}
}

func TestAllThreadsAndProcesses(t *testing.T) {
	mine := listTasks(t, os.Getpid())
	found := 0
	for info, err := range cputime.AllThreads() {
		if err != nil {
			t.Fatal(err)
		}
		if info.ProcessID == os.Getpid() && mine[info.ID] {
			found++
		}
	}
	if found == 0 {
		t.Error("AllThreads did not list this process's threads")
	}
	var self *cputime.ProcessInfo
	for p, err := range cputime.Processes() {
		if err != nil {
			t.Fatal(err)
		}
		if p.ID == os.Getpid() {
			self = &p
		}
	}
	if self == nil {
		t.Fatal("Processes did not list this process")
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	if self.Name != strings.TrimSpace(string(comm)) || self.ParentID != os.Getppid() || self.Threads < 1 {
		t.Errorf("self listed as %+v", *self)
	}
}

func TestErrors(t *testing.T) {
	ids := []int{0, -1, math.MinInt}
	if big := int64(1) << 40; strconv.IntSize == 64 {
		ids = append(ids, int(big))
	}
	for _, id := range ids {
		if _, err := cputime.OpenProcess(id); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenProcess(%d): %v", id, err)
		}
		if _, err := cputime.OpenThread(id); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenThread(%d): %v", id, err)
		}
		for _, err := range cputime.Threads(id) {
			if !errors.Is(err, cputime.ErrInvalidArgument) {
				t.Errorf("Threads(%d): %v", id, err)
			}
		}
	}
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	missing := pidMax + 1 // never handed out
	if _, err := cputime.ProcessTimes(missing); !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("ProcessTimes(%d): %v", missing, err)
	}
	if _, err := cputime.ThreadTimes(missing); !errors.Is(err, cputime.ErrNotFound) {
		t.Errorf("ThreadTimes(%d): %v", missing, err)
	}
	n := 0
	for _, err := range cputime.Threads(missing) {
		n++
		if !errors.Is(err, cputime.ErrNotFound) || !strings.Contains(err.Error(), strconv.Itoa(missing)) {
			t.Errorf("Threads(%d): %v", missing, err)
		}
	}
	if n != 1 {
		t.Errorf("Threads(%d) yielded %d errors, want 1", missing, n)
	}

	h, err := cputime.OpenProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Times(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("Times on a closed handle: %v", err)
	}
	if err := h.Close(); !errors.Is(err, cputime.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
	if err := cputime.CurrentProcess().Close(); err != nil {
		t.Errorf("closing the pseudo-handle: %v", err)
	}
}

// Enumerating another process: its threads are blocked, so each total must
// equal the thread's schedstat to the nanosecond, and the start time in its
// stat line must give the creation time.
func TestThreadsOfOtherProcessAgainstProc(t *testing.T) {
	c := startChild(t, "threads:8")
	n := 0
	for info, err := range cputime.Threads(c.pid()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		// The child's runtime threads (sysmon, the garbage collector) wake
		// now and then: accept the first reading with schedstat unchanged
		// around it, and require ours to equal it exactly.
		total, ss := info.Times.Total(), schedstatRuntime(t, c.pid(), info.ID)
		for try := 0; total != ss && try < 20; try++ {
			time.Sleep(time.Millisecond)
			before := schedstatRuntime(t, c.pid(), info.ID)
			again, err := cputime.ThreadTimes(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after := schedstatRuntime(t, c.pid(), info.ID); before == after {
				total, ss = again.Total(), after
			}
		}
		if total != ss {
			t.Errorf("thread %d: total %v, schedstat %v", info.ID, total, ss)
		}
		st := statFields(t, c.pid(), info.ID)
		if info.Name != st.comm {
			t.Errorf("thread %d: name %q, stat says %q", info.ID, info.Name, st.comm)
		}
		// creation = boot instant + start ticks; the boot
		// instant from CLOCK_REALTIME - CLOCK_BOOTTIME read here.
		want := time.Unix(0, workload.BootOffset()).Add(time.Duration(st.start) * 10 * time.Millisecond)
		// The test's offset reading has an error of its own: microseconds.
		if d := info.Times.Creation.Sub(want); d < -200*time.Microsecond || d > 200*time.Microsecond {
			t.Errorf("thread %d: creation %v, stat start gives %v", info.ID, info.Times.Creation, want)
		}
	}
	if n < 9 {
		t.Errorf("%d threads listed, child has at least 9", n)
	}
}

// Processes agrees with each process's stat line: the exact total is at
// least the ticks the kernel shows, and at most a few ticks more.
func TestProcessesAgainstStat(t *testing.T) {
	c := startChild(t, "burn:100ms")
	// The child's stat read directly before and after the scan brackets
	// what the scan may show: stat's utime and stime are each rounded down
	// to a 10 ms tick, so the exact total lies within 20 ms above them.
	before := procStat(t, c.pid())
	var got *cputime.ProcessInfo
	for p, err := range cputime.Processes() {
		if err != nil {
			t.Fatal(err)
		}
		if p.ID == c.pid() {
			got = &p
		}
	}
	after := procStat(t, c.pid())
	if got == nil {
		t.Fatalf("child %d not listed", c.pid())
	}
	lo := time.Duration(before.utime+before.stime) * 10 * time.Millisecond
	hi := time.Duration(after.utime+after.stime+2) * 10 * time.Millisecond
	if got.Times.Total() < lo || got.Times.Total() > hi {
		t.Errorf("total %v, stat brackets it in [%v, %v]", got.Times.Total(), lo, hi)
	}
	if got.Threads < min(before.threads, after.threads) || got.Threads > max(before.threads, after.threads) ||
		got.ParentID != os.Getpid() || got.Name != before.comm {
		t.Errorf("listed as %+v, stat says %+v then %+v", *got, before, after)
	}
}

type statLine struct {
	comm                string
	utime, stime, start uint64
	threads             int
}

// statFields reads a thread's stat line directly, the naive way.
func statFields(t *testing.T, pid, tid int) statLine {
	t.Helper()
	return parseStatLine(t, "/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/stat")
}

// procStat reads a process's stat line directly.
func procStat(t *testing.T, pid int) statLine {
	t.Helper()
	return parseStatLine(t, "/proc/"+strconv.Itoa(pid)+"/stat")
}

func parseStatLine(t *testing.T, path string) statLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	f := strings.Fields(s[close+2:]) // f[0] is field 3
	num := func(field int) uint64 {
		v, err := strconv.ParseUint(f[field-3], 10, 64)
		if err != nil {
			t.Fatalf("stat field %d of %q: %v", field, s, err)
		}
		return v
	}
	return statLine{comm: s[open+1 : close], utime: num(14), stime: num(15), start: num(22), threads: int(num(20))}
}

// A task's creation time never lies after the moment it is read, however
// young the task.
func TestCreationNeverInFuture(t *testing.T) {
	for range 10 {
		c := startChild(t, "idle")
		for info, err := range cputime.Threads(c.pid()) {
			if err != nil {
				t.Fatal(err)
			}
			if now := time.Now(); info.Times.Creation.After(now) {
				t.Errorf("thread %d created %v, after now %v", info.ID, info.Times.Creation, now)
			}
		}
		got, err := cputime.ProcessTimes(c.pid())
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); got.Creation.After(now) {
			t.Errorf("process created %v, after now %v", got.Creation, now)
		}
		c.stop()
	}
}

// Breaking out of a large scan, which runs on several workers, returns
// promptly and leaves no goroutine behind.
func TestThreadsEarlyBreak(t *testing.T) {
	c := startChild(t, "threads:300")
	before := runtime.NumGoroutine()
	done := make(chan error)
	go func() {
		for range 20 {
			n := 0
			for _, err := range cputime.Threads(c.pid()) {
				if err != nil {
					done <- err
					return
				}
				if n++; n == 5 {
					break
				}
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // 20 scans take well under a second
		t.Fatal("breaking out of Threads deadlocked")
	}
	// Workers exit as they finish their chunk; give them a moment, with a
	// bound that only a leak can reach.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the scans, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
