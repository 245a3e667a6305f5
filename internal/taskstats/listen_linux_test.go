package taskstats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const helperEnv = "CPUTIME_TASKSTATS_HELPER"

// TestMain turns the test binary into the tests' child when helperEnv asks:
// "threads N MS" starts N threads that each burn MS ms of their own CPU,
// print "tid ID CPU_NS" (the thread's CPU clock just before it exits) and
// exit, then prints "done UNIXNANO" and exits.
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode == "check" {
		fmt.Println(Check())
		os.Exit(0)
	} else if mode == "listen-unchecked" {
		// Ask the kernel without our own check first: print its answer.
		check = func() error { return nil }
		l, err := Listen(Options{})
		if err == nil {
			l.Close()
			fmt.Println("registered")
		} else {
			fmt.Println(err)
		}
		os.Exit(0)
	} else if mode != "" {
		helper(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

func helper(mode string) {
	var n, ms int
	fmt.Sscanf(mode, "threads %d %d", &n, &ms)
	// Keep the main thread for main: a locked goroutine that ends on it
	// leaves it wedged, not exited, and its record would come last.
	runtime.LockOSThread()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			for threadCPU() < int64(ms)*1e6 {
			}
			tid, cpu := unix.Gettid(), threadCPU()
			mu.Lock()
			fmt.Printf("tid %d %d\n", tid, cpu)
			mu.Unlock()
		}()
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond) // let the threads finish exiting
	fmt.Printf("done %d\n", time.Now().UnixNano())
}

func listenOrSkip(t *testing.T, o Options) *Listener {
	t.Helper()
	l, err := Listen(o)
	if errors.Is(err, ErrPermission) || errors.Is(err, ErrNamespace) || errors.Is(err, ErrNotSupported) {
		t.Skipf("no exit records here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// collector keeps every batch a listener receives, in its own goroutine.
type collector struct {
	mu      sync.Mutex
	batches []Batch
	cancel  context.CancelFunc
	done    chan error
}

func collect(l *Listener) *collector {
	ctx, cancel := context.WithCancel(context.Background())
	c := &collector{cancel: cancel, done: make(chan error, 1)}
	go func() {
		for {
			b, err := l.Next(ctx)
			if err != nil {
				if ctx.Err() != nil {
					c.done <- nil
				} else {
					c.done <- err
				}
				return
			}
			c.mu.Lock()
			c.batches = append(c.batches, b)
			c.mu.Unlock()
		}
	}()
	return c
}

// waitFor returns the batches once pred holds for them or the timeout
// passes.
func (c *collector) waitFor(timeout time.Duration, pred func([]Batch) bool) []Batch {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		bs := append([]Batch(nil), c.batches...)
		c.mu.Unlock()
		if pred(bs) || time.Now().After(deadline) {
			return bs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *collector) stop(t *testing.T) {
	c.cancel()
	select {
	case err := <-c.done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Next did not return within 5 s of its context's cancel")
	}
}

func find(bs []Batch, kind Kind, id int) (Record, time.Time, bool) {
	for _, b := range bs {
		for _, r := range b.Records {
			if r.Kind == kind && int(r.ID) == id {
				return r, b.Received, true
			}
		}
	}
	return Record{}, time.Time{}, false
}

// findChild returns the first record of process pid, a single-threaded
// child of this process.
func findChild(bs []Batch, pid int) (Record, time.Time, bool) {
	for _, b := range bs {
		for _, r := range b.Records {
			if r.Kind == Thread && int(r.ID) == pid && int(r.TGID) == pid && int(r.PPID) == os.Getpid() {
				return r, b.Received, true
			}
		}
	}
	return Record{}, time.Time{}, false
}

// findOf returns the first record of thread tid of process tgid.
func findOf(bs []Batch, tid, tgid int) (Record, time.Time, bool) {
	for _, b := range bs {
		for _, r := range b.Records {
			if r.Kind == Thread && int(r.ID) == tid && int(r.TGID) == tgid {
				return r, b.Received, true
			}
		}
	}
	return Record{}, time.Time{}, false
}

// tick bounds how stale a task's exact runtime (se.sum_exec_runtime) can
// be in its exit record: the kernel brings it up to date at each context
// switch and scheduler tick, and a task running through do_exit may have
// seen neither for one tick (10 ms at HZ=100, the slowest). The parent's
// rusage is taken after the task's last switch, so it includes that stretch
// and the teardown after the record (exit_mm, files).
const tick = 10 * time.Millisecond

func rusageTotal(ps *os.ProcessState) time.Duration {
	ru := ps.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A single-threaded child (the shell, counting) that burns about 50 ms:
// its record's exact total agrees with what its parent's wait reports,
// and its exit is dated within the wall-clock bracket of the run.
func TestExitOfSingleThreadedChild(t *testing.T) {
	l := listenOrSkip(t, Options{})
	c := collect(l)
	defer c.stop(t)

	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done`)
	before := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	pid := cmd.Process.Pid
	// The child's record: this process its parent (another task with
	// its pid may have exited meanwhile; see TestExitOfThreads).
	bs := c.waitFor(5*time.Second, func(bs []Batch) bool { _, _, ok := findChild(bs, pid); return ok })
	r, received, ok := findChild(bs, pid)
	if !ok {
		t.Fatalf("no exit record of child %d among %d batches", pid, len(bs))
	}
	if _, _, ok := find(bs, Process, pid); ok {
		t.Errorf("a process record for a single-threaded child")
	}
	ru := rusageTotal(cmd.ProcessState)
	got := time.Duration(r.CPURunVirtualTotal)
	t.Logf("child %d: taskstats %v (ticks: user %d µs, kernel %d µs), wait rusage %v; received %v after the wait returned; etime %d µs, run %v",
		pid, got, r.UTime, r.STime, ru, received.Sub(after), r.ETime, after.Sub(before))
	if r.PID != uint32(pid) || r.TGID != uint32(pid) || r.PPID != uint32(os.Getpid()) || r.Comm != "sh" {
		t.Errorf("record names %d/%d parent %d %q, want %d, parent %d, sh", r.PID, r.TGID, r.PPID, r.Comm, pid, os.Getpid())
	}
	if r.Flag&AGROUP == 0 {
		t.Errorf("flags %#x: AGROUP missing on a process's only thread", r.Flag)
	}
	if r.ExitCode != 0 {
		t.Errorf("exit code %#x, want 0", r.ExitCode)
	}
	// rusage is in whole µs.
	if got > ru+2*time.Microsecond || ru-got > tick+3*time.Millisecond {
		t.Errorf("taskstats total %v, wait rusage %v: want at most the rusage, within a tick + 3 ms of it", got, ru)
	}
	if got < 10*time.Millisecond {
		t.Errorf("the child burned only %v; the loop is meant to take ~50 ms", got)
	}
	if received.Before(before) || received.After(after.Add(time.Second)) {
		t.Errorf("received at %v, outside [%v, wait return + 1 s]", received, before)
	}
	// Creation is dated by the arrival, so it carries the reader's delay
	// past the wait's return, if any.
	created := received.Add(-time.Duration(r.ETime) * time.Microsecond)
	late := max(received.Sub(after), 0)
	if created.Before(before.Add(-time.Millisecond)) || created.Add(-late).After(after) {
		t.Errorf("creation (received - etime) %v outside the run [%v, %v] (+ %v received late)", created, before, after, late)
	}
	if d := created.Unix() - int64(r.BTime); d < -1 || d > 1 {
		t.Errorf("creation %v and ac_btime64 %d s differ by %d s", created, r.BTime, d)
	}
	// The kernel made the record within the wall-clock second
	// ac_btime64 + ac_etime in whole seconds (bacct_add_tsk).
	if sec := time.Unix(int64(r.BTime+r.ETime/1e6), 0); received.Before(sec) || received.After(sec.Add(time.Second+100*time.Millisecond)) {
		t.Errorf("received %v, but the kernel dated the record in the second from %v", received, sec)
	}
}

// A multi-threaded child (this binary): each thread that exits on its own
// has a record with at least the CPU time it measured of itself; the
// process record that comes with the last thread's has the whole
// process's exact total, which its parent's wait rusage confirms.
func TestExitOfThreads(t *testing.T) {
	l := listenOrSkip(t, Options{})
	c := collect(l)
	defer c.stop(t)

	const n, ms = 4, 10
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=threads %d %d", helperEnv, n, ms))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	own := map[int]int64{}
	var lastWords time.Time
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "done" {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			lastWords = time.Unix(0, ns)
		}
		if len(f) == 3 && f[0] == "tid" {
			tid, _ := strconv.Atoi(f[1])
			cpu, _ := strconv.ParseInt(f[2], 10, 64)
			own[tid] = cpu
		}
	}
	if len(own) != n {
		t.Fatalf("child printed %d threads, want %d:\n%s", len(own), n, out)
	}
	bs := c.waitFor(5*time.Second, func(bs []Batch) bool { _, _, ok := find(bs, Process, pid); return ok })
	for tid, cpu := range own {
		// The listener hears every exit on the machine, and other
		// packages' tests, run at the same time, steer pids back
		// (ns_last_pid): an earlier task with the same id may have
		// exited meanwhile, so the record is the child's.
		r, _, ok := findOf(bs, tid, pid)
		if !ok {
			t.Errorf("thread %d: no exit record", tid)
			continue
		}
		got := int64(r.CPURunVirtualTotal)
		t.Logf("thread %d: measured itself %v, record %v", tid, time.Duration(cpu), time.Duration(got))
		if r.TGID != uint32(pid) || got < cpu-int64(tick) || got > cpu+int64(5*time.Millisecond) {
			t.Errorf("thread %d: record of process %d with %v, want process %d, [%v - a tick, + 5 ms]", tid, r.TGID, time.Duration(got), pid, time.Duration(cpu))
		}
		if r.Flag&AGROUP != 0 {
			t.Errorf("thread %d: AGROUP set, but the process went on", tid)
		}
	}
	p, received, ok := find(bs, Process, pid)
	if !ok {
		t.Fatalf("no process record for %d", pid)
	}
	// The process exits after its last words, and its record comes after.
	t.Logf("process record received %v after the child's last words", received.Sub(lastWords))
	if lastWords.IsZero() || received.Before(lastWords) {
		t.Errorf("process record received at %v, before the child's last words at %v", received, lastWords)
	}
	var sum uint64
	for _, b := range bs {
		for _, r := range b.Records {
			if r.Kind == Thread && r.TGID == uint32(pid) {
				sum += r.CPURunVirtualTotal
			}
		}
	}
	ru := rusageTotal(cmd.ProcessState)
	got := time.Duration(p.CPURunVirtualTotal)
	t.Logf("process %d: record %v, its threads' records %v, wait rusage %v", pid, got, time.Duration(sum), ru)
	if got > ru+2*time.Microsecond || ru-got > tick+3*time.Millisecond {
		t.Errorf("process total %v, wait rusage %v: want at most the rusage, within a tick + 3 ms", got, ru)
	}
	if d := time.Duration(sum) - got; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("threads add up to %v, the process record says %v", time.Duration(sum), got)
	}
}

// With the smallest receive queue and nobody reading, a burst of exits
// overflows it: the kernel's drops are reported, and every child of the
// burst is either received or among those counted as dropped.
func TestDropsCounted(t *testing.T) {
	l := listenOrSkip(t, Options{ReceiveBuffer: 1})
	const n = 40
	pids := map[int]bool{}
	for range n {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		pids[cmd.Process.Pid] = true
	}
	var dropped uint64
	exact := true
	seen := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		b, err := l.Next(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dropped += b.Dropped
		if b.Dropped > 0 && !b.DroppedExact {
			exact = false
		}
		for _, r := range b.Records {
			if r.Kind == Thread && pids[int(r.ID)] {
				seen++
			}
		}
	}
	total, err := l.Dropped()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exits in a burst: %d received, %d dropped reported (%d by the socket's count, exact %v)", n, seen, dropped, total, exact)
	if dropped == 0 {
		t.Fatalf("no drops reported with a minimal queue and %d exits", n)
	}
	// Other tasks' exits may still overflow the tiny queue after the last
	// report: the socket's count can only be ahead.
	if exact && dropped > total {
		t.Errorf("reported %d drops, the socket counted %d", dropped, total)
	}
	if missing := uint64(n - seen); missing > total {
		t.Errorf("%d of our exits missing, only %d drops counted", missing, total)
	}
}

// A query for a live process agrees with the process CPU clock read around
// it (the kernel's per-thread runtimes lag by at most a tick per CPU).
func TestQueryOwnProcess(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("no taskstats here: %v", err)
	}
	clock := func() time.Duration {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	before := clock()
	r, err := Query(Process, os.Getpid())
	after := clock()
	if err != nil {
		t.Fatal(err)
	}
	got := time.Duration(r.CPURunVirtualTotal)
	t.Logf("query: %v, process clock %v .. %v", got, before, after)
	if got > after || got < before-time.Duration(runtime.NumCPU())*10*time.Millisecond {
		t.Errorf("query says %v, process clock %v .. %v", got, before, after)
	}
	th, err := Query(Thread, unix.Gettid())
	if err != nil || th.PID != uint32(unix.Gettid()) || th.TGID != uint32(os.Getpid()) {
		t.Errorf("thread query: %+v, %v", th, err)
	}
	if _, err := Query(Process, 1<<22); err == nil || !errors.Is(err, syscall.ESRCH) && !strings.Contains(err.Error(), "invalid") {
		t.Errorf("query of a pid that cannot exist: %v", err)
	}
}

func TestParseNetlinkDrops(t *testing.T) {
	const text = `sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode
ffff9b2e0d0c8000 0   1          00000000 0        0        0     2        0        1234
ffff9b2e0d0c9000 16  3120       00000000 2304     0        0     2        37       98765
`
	got, err := parseNetlinkDrops(strings.NewReader(text), 98765)
	if err != nil || got != 37 {
		t.Errorf("got %d, %v; want 37", got, err)
	}
	if _, err := parseNetlinkDrops(strings.NewReader(text), 5); err == nil {
		t.Error("no error for a socket that is not listed")
	}
	if _, err := parseNetlinkDrops(strings.NewReader("garbage\n"), 5); err == nil {
		t.Error("no error without the header")
	}
}

// A cancelled Next returns promptly, and the listener goes on receiving
// with the next context.
func TestNextCancel(t *testing.T) {
	l := listenOrSkip(t, Options{})
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		start := time.Now()
		_, err := l.Next(ctx)
		cancel()
		if err == nil {
			continue // another task on the machine exited
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's error", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Next returned %v after its context ended", d)
		}
		break
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		b, err := l.Next(ctx)
		if err != nil {
			t.Fatalf("after a cancel: %v", err)
		}
		if _, _, ok := find([]Batch{b}, Thread, cmd.Process.Pid); ok {
			return
		}
	}
}

// Check's reasons are the kernel's: without CAP_NET_ADMIN the kernel
// refuses the registration (EPERM), and in a pid namespace of its own it
// rejects it (EINVAL), as Check says beforehand. The privileges are dropped
// for a child by setpriv and unshare (util-linux).
func TestCheckAgreesWithKernel(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("needs a process that can listen, to take it away: %v", err)
	}
	for _, tc := range []struct {
		tool      string
		args      []string
		kernel    string // what the kernel answers
		checkSays string
	}{
		{"setpriv", []string{"--bounding-set=-net_admin", "--inh-caps=-net_admin", "--"}, "operation not permitted", "does not have it"},
		{"unshare", []string{"--pid", "--fork", "--"}, "invalid argument", "in a pid namespace of its own"},
		{"unshare", []string{"--user", "--map-root-user", "--"}, "operation not permitted", "in a user namespace of its own"},
	} {
		path, err := exec.LookPath(tc.tool)
		if err != nil {
			t.Logf("skipping the %s case: %v", tc.tool, err)
			continue
		}
		run := func(mode string) string {
			cmd := exec.Command(path, append(tc.args, os.Args[0], "-test.run=^$")...)
			cmd.Env = append(os.Environ(), helperEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %q: %v: %s", tc.tool, tc.args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		kernel := run("listen-unchecked")
		t.Logf("%s %q: the kernel says: %s", tc.tool, tc.args, kernel)
		if kernel == "registered" || !strings.Contains(kernel, tc.kernel) {
			t.Errorf("%s %q: the kernel answered %q, want %q", tc.tool, tc.args, kernel, tc.kernel)
		}
		if says := run("check"); !strings.Contains(says, tc.checkSays) {
			t.Errorf("%s %q: Check says %q, want %q", tc.tool, tc.args, says, tc.checkSays)
		}
	}
}

// As root the queue is the size asked for, beyond net.core.rmem_max (the
// kernel reports twice the value, its bookkeeping included).
func TestReceiveBuffer(t *testing.T) {
	l := listenOrSkip(t, Options{})
	var got int
	var gerr error
	if err := l.c.rc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	t.Logf("SO_RCVBUF %d bytes", got)
	if got < 2*DefaultReceiveBuffer {
		t.Errorf("SO_RCVBUF %d, want %d", got, 2*DefaultReceiveBuffer)
	}
}

// TryNext never waits: with nothing queued it says so at once, and the
// record of a child that exited is among what it then returns, the same
// record wait's rusage bounds.
func TestTryNext(t *testing.T) {
	l := listenOrSkip(t, Options{})
	for { // what other exits queued meanwhile
		_, ok, err := l.TryNext()
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	cmd := exec.Command("sh", "-c", "exit 3")
	cmd.Run()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, ok, err := l.TryNext()
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(time.Millisecond)
			continue
		}
		for _, r := range b.Records {
			if r.Kind == Thread && r.PID == uint32(pid) {
				if r.ExitCode != 3<<8 {
					t.Errorf("exit code %#x, want %#x", r.ExitCode, 3<<8)
				}
				if ru := rusageTotal(cmd.ProcessState); time.Duration(r.CPURunVirtualTotal) > ru+2*time.Microsecond {
					t.Errorf("taskstats %v above wait's rusage %v", time.Duration(r.CPURunVirtualTotal), ru)
				}
				return
			}
		}
	}
	t.Fatalf("no record of child %d within 5 s", pid)
}

// Drain takes every queued record, many per system call: the records of
// 200 children that exited are all among what one Drain returns, each
// with its exit status.
func TestDrain(t *testing.T) {
	l := listenOrSkip(t, Options{Unpolled: true})
	if err := l.Drain(func(Batch) {}); err != nil && !errors.Is(err, ErrMalformed) {
		t.Fatal(err)
	}
	want := map[uint32]bool{}
	for range 200 {
		cmd := exec.Command("sh", "-c", "exit 7")
		cmd.Run()
		want[uint32(cmd.Process.Pid)] = true
	}
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for got < len(want) && time.Now().Before(deadline) {
		err := l.Drain(func(b Batch) {
			for _, r := range b.Records {
				if r.Kind == Thread && want[r.PID] {
					got++
					if r.ExitCode != 7<<8 {
						t.Errorf("child %d: exit code %#x", r.PID, r.ExitCode)
					}
				}
			}
		})
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if got != len(want) {
		t.Fatalf("%d of %d children's records", got, len(want))
	}
}

// exitThreads starts n threads one after the other, each of which exits
// at once (a goroutine that returns locked to its thread ends the thread).
func exitThreads(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			runtime.LockOSThread()
			wg.Done()
		}()
		wg.Wait()
	}
}

// BenchmarkDrain receives the exit records of 1,000 threads that exited
// meanwhile (not timed): the cost of each exit to a recorder that keeps
// up (ns/record, the kernel's recvmmsg most of it), and what Drain
// allocates for them.
func BenchmarkDrain(b *testing.B) {
	l, err := Listen(Options{Unpolled: true, ReceiveBuffer: 128 << 20})
	if err != nil {
		b.Skipf("no exit records here: %v", err)
	}
	defer l.Close()
	recs := 0
	for b.Loop() {
		b.StopTimer()
		exitThreads(1000)
		b.StartTimer()
		l.Drain(func(bt Batch) { recs += len(bt.Records) })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(recs), "ns/record")
}

// BenchmarkDecode decodes the exit messages of 200 threads as received:
// Drain's share of the cost that is not the kernel's.
func BenchmarkDecode(b *testing.B) {
	l, err := Listen(Options{Unpolled: true, ReceiveBuffer: 128 << 20})
	if err != nil {
		b.Skipf("no exit records here: %v", err)
	}
	defer l.Close()
	l.Drain(func(Batch) {}) // what other tasks left
	exitThreads(200)
	var msgs [][]byte
	l.Drain(func(Batch) {})
	for i := range l.msgs {
		if m := l.msgs[i].Len; m > 0 {
			msgs = append(msgs, bytes.Clone(l.mbuf[i*drainMsgSize:i*drainMsgSize+int(m)]))
		}
	}
	if len(msgs) == 0 {
		b.Skip("no exit message received")
	}
	var names nameCache
	var out []Record
	for b.Loop() {
		for _, m := range msgs {
			out, _ = decodeAppend(out[:0], m, l.family, &names)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
}
