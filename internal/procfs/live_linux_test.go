package procfs

import (
	"errors"
	iofs "io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/testutil/workload"
)

// These tests read the real /proc and check it against independent
// sources: getpid, getrusage, the status file read by hand, a child's start.

// userHZ is USER_HZ, the unit of stat times: 100 on every architecture Go
// supports on Linux (include/asm-generic/param.h); sysconf(_SC_CLK_TCK)
// reports it.
const userHZ = 100

// gone reports whether err says the task exited while being read.
func gone(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

func TestLiveSelf(t *testing.T) {
	var fs FS
	pid := os.Getpid()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseStat(b)
	if err != nil {
		t.Fatalf("ParseStat(%q): %v", b, err)
	}
	if s.PID != pid || s.PPID != os.Getppid() || !isLetter(s.State) || s.NumThreads < 1 || s.Processor < 0 {
		t.Errorf("/proc/self/stat: %+v; pid %d ppid %d", s, pid, os.Getppid())
	}

	st, err := fs.ReadStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if st.Tgid != pid || st.Pid != pid || st.PPid != os.Getppid() || st.Uid[0] != uid || st.Gid[0] != gid ||
		st.Name != string(s.Comm) || st.Threads < 1 {
		t.Errorf("ReadStatus(%d) = %+v; stat comm %q, uid %d gid %d", pid, st, s.Comm, uid, gid)
	}

	s2, err := fs.ReadStat(pid)
	if err != nil || s2.PID != pid || string(s2.Comm) != string(s.Comm) || s2.StartTime != s.StartTime {
		t.Errorf("ReadStat(%d) = %+v, %v; want like %+v", pid, s2, err, s)
	}
}

func TestLiveTasks(t *testing.T) {
	var fs FS
	pid := os.Getpid()
	proc, err := fs.ReadStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	tids, err := fs.TIDs(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tids, pid) {
		t.Errorf("TIDs(%d) = %v lacks the main thread", pid, tids)
	}
	read := 0
	for _, tid := range tids {
		s, err := fs.ReadTaskStat(pid, tid)
		if gone(err) {
			continue // the runtime may end a thread
		}
		if err != nil {
			t.Errorf("ReadTaskStat(%d, %d): %v", pid, tid, err)
			continue
		}
		read++
		if s.PID != tid || s.StartTime < proc.StartTime || s.Processor < 0 || s.NumThreads < 1 {
			t.Errorf("ReadTaskStat(%d, %d) = %+v; process %+v", pid, tid, s, proc)
		}
		if _, err := fs.ReadTaskSchedstat(pid, tid); err != nil && !gone(err) {
			if errors.Is(err, iofs.ErrNotExist) {
				t.Logf("no schedstat (kernel without CONFIG_SCHED_INFO?): %v", err)
			} else {
				t.Errorf("ReadTaskSchedstat(%d, %d): %v", pid, tid, err)
			}
		}
	}
	if read == 0 {
		t.Error("no thread could be read")
	}
}

func TestLivePIDs(t *testing.T) {
	pids, err := FS{}.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) || !slices.Contains(pids, os.Getppid()) {
		t.Errorf("PIDs() = %v lacks %d or %d", pids, os.Getpid(), os.Getppid())
	}
	if !slices.IsSorted(pids) {
		t.Error("PIDs() not sorted")
	}
}

// TestLiveTIDsThreads checks TIDs against the Threads line of status, read
// and parsed by hand. The runtime may start or end a thread between the two
// reads, so it retries.
func TestLiveTIDsThreads(t *testing.T) {
	pid := os.Getpid()
	var tids []int
	var threads int
	for try := 0; try < 20; try++ {
		var err error
		if tids, err = (FS{}).TIDs(pid); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		threads = -1
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				if threads, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(tids) == threads {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("TIDs() = %v (%d), status says Threads: %d", tids, len(tids), threads)
}

// newThread starts an OS thread of its own and returns its id, a function
// running f on it, and a function ending it. It is never the main thread,
// which the runtime does not let exit (it parks it for good instead).
func newThread(t *testing.T) (tid int, do func(f func()), exit func()) {
	t.Helper()
	// Hold the caller's thread while spawning, so the goroutine is not run
	// on it; park any goroutine that lands on the main thread until the
	// test ends, so the next try gets another.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for try := 0; try < 100; try++ {
		work := make(chan func())
		tids := make(chan int)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == os.Getpid() {
				tids <- 0
				<-release
				runtime.UnlockOSThread()
				return
			}
			tids <- unix.Gettid()
			for f := range work {
				f()
			}
			// Returning locked ends the thread.
		}()
		if tid = <-tids; tid != 0 {
			var once sync.Once
			exit = func() { once.Do(func() { close(work) }) }
			t.Cleanup(exit)
			do = func(f func()) {
				done := make(chan struct{})
				work <- func() { f(); close(done) }
				<-done
			}
			return tid, do, exit
		}
	}
	t.Skip("every new goroutine ran on the main thread")
	return
}

// TestLiveThreadName names a thread with everything the parsers must cope
// with: ") (", a newline, a backslash.
func TestLiveThreadName(t *testing.T) {
	const name = "a) (b\nc\\d e"
	tid, do, exit := newThread(t)
	defer exit() // the name dies with the thread
	var err error
	do(func() {
		var p *byte
		if p, err = unix.BytePtrFromString(name); err == nil {
			err = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var fs FS
	pid := os.Getpid()
	s, err := fs.ReadTaskStat(pid, tid)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadFileInto(fs.Path(strconv.Itoa(pid), "task", strconv.Itoa(tid), "status"), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStatus(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Comm) != name || st.Name != name || s.PID != tid || st.Pid != tid || st.Tgid != pid {
		t.Errorf("thread %d named %q: stat %+v (comm %q), status %+v", tid, name, s, s.Comm, st)
	}
	if p, err := fs.ReadStat(pid); err != nil || string(p.Comm) == name {
		t.Errorf("process renamed with its thread: %q, %v", p.Comm, err)
	}
}

// TestLiveCPUTime burns CPU on one thread and checks its stat and schedstat
// against getrusage(RUSAGE_THREAD). The kernel derives the stat ticks and
// the rusage times from the same sum_exec_runtime, split into user and
// system alike, so their sums agree but for truncation to ticks.
func TestLiveCPUTime(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, tid := os.Getpid(), unix.Gettid()
	var fs FS
	var r1, r2 unix.Rusage
	// Burn 150 ms of CPU, not of wall time: on a loaded machine the thread
	// may wait for a CPU most of the time.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &r1); err != nil {
			t.Fatal(err)
		}
		if r1.Utime.Nano()+r1.Stime.Nano() >= 150e6 {
			break
		}
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &r1); err != nil {
		t.Fatal(err)
	}
	s, err := fs.ReadTaskStat(pid, tid)
	if err != nil {
		t.Fatal(err)
	}
	ss, ssErr := fs.ReadTaskSchedstat(pid, tid)
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &r2); err != nil {
		t.Fatal(err)
	}
	tick := time.Second / userHZ
	ru := func(r unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	stat := time.Duration(s.UTime+s.STime) * tick
	t.Logf("rusage %v..%v, stat %v (utime %d stime %d ticks), schedstat %+v", ru(r1), ru(r2), stat, s.UTime, s.STime, ss)
	// Each of utime and stime is truncated to a tick.
	if stat < ru(r1)-2*tick || stat > ru(r2)+tick {
		t.Errorf("stat utime+stime %v outside rusage %v..%v", stat, ru(r1), ru(r2))
	}
	if ssErr != nil {
		t.Logf("no schedstat: %v", ssErr)
		return
	}
	// schedstat lags the running thread by up to a scheduler tick.
	if run := time.Duration(ss.RunTime); run < ru(r1)-2*tick || run > ru(r2)+tick {
		t.Errorf("schedstat run time %v outside rusage %v..%v", run, ru(r1), ru(r2))
	}
}

// TestLiveStartTime checks StartTime and BootTime together against the wall
// clock around the start of a child.
func TestLiveStartTime(t *testing.T) {
	sys, err := FS{}.ReadSysStat()
	if err != nil {
		t.Fatal(err)
	}
	if len(sys.CPUs) == 0 || sys.Total.CPU != -1 || sys.Total.Idle == 0 {
		t.Errorf("ReadSysStat() = %+v", sys)
	}
	before := time.Now()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	after := time.Now()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	s, err := FS{}.ReadStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(int64(sys.BootTime), 0).Add(time.Duration(s.StartTime) * (time.Second / userHZ))
	// btime is whole seconds; the start is in ticks.
	if start.Before(before.Add(-1500*time.Millisecond)) || start.After(after.Add(1500*time.Millisecond)) {
		t.Errorf("child started at btime %d + %d ticks = %v, want within %v..%v", sys.BootTime, s.StartTime, start, before, after)
	}
	if s.PPID != os.Getpid() {
		t.Errorf("child's PPID = %d, want %d", s.PPID, os.Getpid())
	}
}

// A child's stat file opened while it runs still reads once it has exited
// (a zombie), with its own and its reaped child's times, which its
// parent's wait4 then confirms; once it is reaped, the file fails rather
// than answer for another process.
func TestLiveOpenStatOfZombie(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'; i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	f, err := FS{}.OpenStat(pid)
	if err != nil {
		cmd.Wait()
		t.Fatal(err)
	}
	defer f.Close()
	// Wait for the exit without reaping (WNOWAIT): the zombie stays.
	var info unix.Siginfo
	for {
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		cmd.Wait()
		t.Fatal(err)
	}
	st, err := f.Read()
	if err != nil {
		cmd.Wait()
		t.Fatalf("reading the zombie's stat: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	tick := time.Second / userHZ
	own := time.Duration(st.UTime+st.STime) * tick
	tree := time.Duration(st.UTime+st.STime+st.CUTime+st.CSTime) * tick
	waited := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	t.Logf("zombie %d (%c): own %v, with its reaped child %v; wait4 %v", pid, st.State, own, tree, waited)
	if st.PID != pid || st.State != 'Z' {
		t.Errorf("read %d in state %c, want %d a zombie", st.PID, st.State, pid)
	}
	if st.CUTime+st.CSTime == 0 || own == 0 {
		t.Errorf("own %v, children's %d ticks: both loops burned CPU", own, st.CUTime+st.CSTime)
	}
	// Each of the four times is whole ticks, rounded down; wait4's are
	// the same in µs.
	if d := waited - tree; d < -time.Microsecond || d > 4*tick {
		t.Errorf("stat says %v for the tree, wait4 %v: want wait4's within four ticks below", tree, waited)
	}
	if _, err := f.Read(); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("reading the reaped process's stat: %v, want ESRCH", err)
	}
}

// TestLiveTIDsUnderChurn lists this process's threads while others are
// created and end without pause (workload.ChurnThreads), and checks that
// every thread that stays is among them.
func TestLiveTIDsUnderChurn(t *testing.T) {
	var fs FS
	workload.ChurnThreads(t, 4)
	var staying []int
	for i := range 200 {
		if i%10 == 0 {
			staying = append(staying, workload.StayingThread(t))
		}
		got, err := fs.LiveTIDs(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		for _, tid := range staying {
			if _, found := slices.BinarySearch(got, tid); !found {
				t.Fatalf("thread %d, alive throughout, not listed by LiveTIDs", tid)
			}
		}
	}
}
