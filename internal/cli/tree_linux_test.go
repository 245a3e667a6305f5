package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/internal/timeline"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the programs these tests run: with
// CPUTIME_CLI_HELPER set it does that job and exits before any test runs.
// burn:MS, tree and threads:N:MS:K are internal/testutil/workload's Job; here also
//
//	cli ARG…  run the cputime command with ARG… (for signal tests)
//	rss:MIB   touch MIB MiB of memory, then exit
//	fsize0    lower the parent's file size limit (RLIMIT_FSIZE) to 0, so
//	          that its every write to a file fails with EFBIG; exit 7
func init() {
	job := os.Getenv(cliHelperEnv)
	if job == "" {
		return
	}
	os.Unsetenv(cliHelperEnv)
	workload.Job(job, cliHelperEnv) // returns for the others
	if job == "cli" {
		os.Exit(Run(Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: System{}}, os.Args[1:]))
	}
	if job == "fsize0" {
		var lim unix.Rlimit
		if unix.Prlimit(os.Getppid(), unix.RLIMIT_FSIZE, nil, &lim) != nil {
			os.Exit(93)
		}
		lim.Cur = 0
		if unix.Prlimit(os.Getppid(), unix.RLIMIT_FSIZE, &lim, nil) != nil {
			os.Exit(93)
		}
		os.Exit(7)
	}
	var mib int
	if _, err := fmt.Sscanf(job, "rss:%d", &mib); err == nil {
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		os.Exit(int(b[len(b)-4096]) - 1)
	}
	os.Exit(92)
}

const cliHelperEnv = "CPUTIME_CLI_HELPER"

func helperCmd(job string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), cliHelperEnv+"="+job)
	return c
}

type runJSON struct {
	jsonProcess
	TotalUserNs    *int64         `json:"total_user_ns"`
	TotalKernelNs  *int64         `json:"total_kernel_ns"`
	TotalPrecision string         `json:"total_precision"`
	Children       []jsonChild    `json:"children"`
	Recording      *jsonRecording `json:"recording"`

	Exit                       *jsonExitStatus `json:"exit"`
	WallNs                     *int64          `json:"wall_ns"`
	CPUPercent                 *float64        `json:"cpu_percent"`
	MaxRSSKiB                  *int64          `json:"max_rss_kib"`
	VoluntaryContextSwitches   *int64          `json:"voluntary_context_switches"`
	InvoluntaryContextSwitches *int64          `json:"involuntary_context_switches"`
	Subreaper                  *bool           `json:"subreaper"`
	OrphansReaped              *int            `json:"orphans_reaped"`
	OrphansRunning             *int            `json:"orphans_running"`
}

// treeSum adds up the recorded own times of c and all its descendants.
func treeSum(c []jsonChild) (time.Duration, int) {
	var d time.Duration
	n := 0
	for _, k := range c {
		kd, kn := treeSum(k.Children)
		d += time.Duration(k.UserNs+k.KernelNs) + kd
		n += 1 + kn
	}
	return d, n
}

// needRecording skips where the system does not let us record the tree.
func needRecording(t *testing.T, rec runJSON) {
	t.Helper()
	if rec.Recording == nil || rec.Recording.Error != "" {
		t.Skipf("the tree was not recorded: %+v", rec.Recording)
	}
}

// A tree of 3 children burning 100 ms each and a parent burning 20 ms: the
// totals are the tree's (what time(1) reports), cross-checked against
// RUSAGE_CHILDREN of this process; the top process's own fields stay its own.
func TestRunTreeTotals(t *testing.T) {
	if err := exec.Command("true").Run(); err != nil { // the runtime's pidfd probe child, out of the way
		t.Fatal(err)
	}
	before := childrenRusage(t)
	// run's child gets our environment: env(1) sets the job.
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "env", "CPUTIME_CLI_HELPER=tree", os.Args[0], "-test.run=^$")
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if rec.TotalUserNs == nil || rec.TotalKernelNs == nil {
		t.Fatalf("no totals: %s", stderr)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	if d := total - used; d.Abs() > 2*time.Microsecond {
		t.Errorf("tree total %v, RUSAGE_CHILDREN grew by %v", total, used)
	}
	// The top process's own: the 20 ms it burned, and its start, which
	// for a race-enabled test binary under load can take more; never its
	// children's 3 × 100 ms, which the tree total holds besides.
	own := time.Duration(rec.UserNs + rec.KernelNs)
	if own < 20*time.Millisecond || own > total-270*time.Millisecond {
		t.Errorf("top process's own total %v, want 20ms or more and the tree's %v less its children's 300ms or less", own, total)
	}
	// The tree: what each burned, and no more than each child's bound
	// below (130 ms) above the top process's own.
	if total < 320*time.Millisecond || total > own+3*130*time.Millisecond {
		t.Errorf("tree total %v, want from 320ms (3 × 100 + 20) to %v (the top process's %v and 3 × 130ms)", total, own+3*130*time.Millisecond, own)
	}
	if rec.TotalPrecision != "1us" {
		t.Errorf("precision %q", rec.TotalPrecision)
	}
	// children: the env process execs the helper (one pid), which starts
	// the 3 burners (and the Go runtime's fork probe, which exits at once).
	needRecording(t, rec)
	burners := 0
	for _, c := range rec.Children {
		d := time.Duration(c.UserNs + c.KernelNs)
		switch {
		case d >= 50*time.Millisecond:
			burners++
			// 100 ms of each one's process clock; the recorder's counters
			// miss the first instants of each switch (up to 4.5% under
			// contention).
			if d < 92*time.Millisecond || d > 130*time.Millisecond {
				t.Errorf("child %d: %v, want 100ms and a little", c.PID, d)
			}
			if c.ExitTime == nil || len(c.Threads) == 0 || c.PPID != rec.PID {
				t.Errorf("child %+v", c)
			}
			for _, th := range c.Threads {
				if time.Time(th.ExitTime).IsZero() {
					t.Errorf("child %d thread %d: no exit time", c.PID, th.TID)
				}
			}
		case d > 2*time.Millisecond:
			t.Errorf("child %d (%s) used %v", c.PID, c.Name, d)
		}
	}
	if burners != 3 {
		t.Fatalf("%d burning children, want 3: %s", burners, stderr)
	}
	// The recorded tree against wait4's: the same within the switches
	// the counters miss.
	kids, _ := treeSum(rec.Children)
	recorded := own + kids
	if d := recorded - total; d > total/10+time.Millisecond || d < -total/10-time.Millisecond {
		t.Errorf("recorded tree %v, wait4's %v", recorded, total)
	}
	t.Logf("tree: wait4 %v, recorded %v (%d lost records)", total, recorded, rec.Recording.LostRecords)
	if rec.Recording.LostRecords != 0 {
		t.Errorf("lost records: %d", rec.Recording.LostRecords)
	}
}

// yes in the background of a shell for 1 s: the tree's total is what yes
// got of a CPU in that second (all of one on an idle machine, less when other
// work shares the CPUs), to the µs what RUSAGE_CHILDREN of this process
// says, and against time(1) where it is installed.
func TestRunTreeBackgroundJob(t *testing.T) {
	const script = "yes >/dev/null & p=$!; sleep 1; kill $p; wait"
	if err := exec.Command("true").Run(); err != nil { // the runtime's pidfd probe child, out of the way
		t.Fatal(err)
	}
	before := childrenRusage(t)
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", script)
	used := childrenRusage(t) - before
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	if d := total - used; d.Abs() > 2*time.Microsecond {
		t.Errorf("tree total %v, RUSAGE_CHILDREN grew by %v", total, used)
	}
	// The tree total must hold yes's share of the second besides the
	// shell's own few ms, whatever the load (CPU hogs and a build beside
	// it leave yes little of it).
	own := time.Duration(rec.UserNs + rec.KernelNs)
	if total-own < 10*time.Millisecond || total > 1200*time.Millisecond {
		t.Errorf("tree total %v, the shell's own %v: want yes's share of 1 s as well", total, own)
	}
	if own > 50*time.Millisecond {
		t.Errorf("the shell's own total %v", own)
	}
	needRecording(t, rec)
	var yes *jsonChild
	for i, c := range rec.Children {
		if c.Name == "yes" {
			yes = &rec.Children[i]
		}
	}
	if yes == nil || yes.ExitTime == nil {
		t.Fatalf("no yes among the children: %s", stderr)
	}
	// The task-clock counts the last instants of each switch away from
	// yes, which the scheduler's runtime (which wait4 sums) leaves out:
	// seen 1.4% above; and it misses the first instants of each switch to
	// it: see the README.
	if d := time.Duration(yes.UserNs+yes.KernelNs) - total; d > total/10+time.Millisecond || d < -total/10-2*time.Millisecond {
		t.Errorf("yes used %v, the tree %v", time.Duration(yes.UserNs+yes.KernelNs), total)
	}
	if _, err := exec.LookPath("/usr/bin/time"); err != nil {
		t.Log("time(1) cross-check skipped: install with apt-get install time")
		return
	}
	out, err := exec.Command("/usr/bin/time", "-f", "%U %S", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("time(1): %v: %s", err, out)
	}
	f := strings.Fields(string(out))
	u, _ := strconv.ParseFloat(f[len(f)-2], 64)
	s, _ := strconv.ParseFloat(f[len(f)-1], 64)
	tt := time.Duration((u + s) * float64(time.Second))
	// Two separate runs of the same job: yes gets what the machine's other
	// work leaves it, which differs widely from run to run on a loaded
	// machine, so they are compared when both got most of a CPU.
	if total < 800*time.Millisecond || tt < 800*time.Millisecond {
		t.Logf("time(1) cross-check skipped: the machine is loaded (tree total %v, time(1) on the same job %v)", total, tt)
		return
	}
	if d := total - tt; d.Abs() > 300*time.Millisecond {
		t.Errorf("tree total %v, time(1) on the same job %v", total, tt)
	}
}

// wait on a shell (not our child) whose background job burns CPU and is
// reaped by it: the tree total includes the job, in 10 ms ticks, against
// the shell's ProcessState (its own times and its reaped children's).
func TestWaitTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; i=0; (while [ $i -lt 150000 ]; do i=$((i+1)); done) & wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out, errs string
		status    int
	}
	res := make(chan result, 1)
	go func() {
		o, e, s := runCLI(t, System{}, "wait", "--json", strconv.Itoa(cmd.Process.Pid))
		res <- result{o, e, s}
	}()
	// wait opens its handle and the stat file before it waits; let the
	// shell go only once wait is blocked on it (it cannot miss the exit:
	// the shell stays a zombie until we reap it below).
	for !waiting(cmd.Process.Pid) {
		time.Sleep(time.Millisecond)
	}
	in.Close()
	r := <-res
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if r.status != 0 {
		t.Fatalf("status %d: %s", r.status, r.errs)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(r.out), &rec); err != nil {
		t.Fatalf("%v: %s", err, r.out)
	}
	if rec.TotalUserNs == nil {
		t.Fatalf("no totals: %s", r.out)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	shell := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	// Ticks of 10 ms, each part truncated: up to 2 ticks per part below.
	if total > shell+time.Millisecond || total < shell-40*time.Millisecond {
		t.Errorf("wait's tree total %v; the shell's ProcessState %v", total, shell)
	}
	if rec.TotalPrecision != "10ms" {
		t.Errorf("precision %q", rec.TotalPrecision)
	}
}

// waiting reports whether this process holds a pidfd of pid open: wait's
// handle, opened just before it blocks.
func waiting(pid int) bool {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err == nil && strings.Contains(string(b), "Pid:\t"+strconv.Itoa(pid)+"\n") {
			return true
		}
	}
	return false
}

// SIGTERM, SIGHUP, SIGINT and SIGQUIT, to cputime's whole process group
// (a kill of the job) or to cputime alone: CMD ends by the signal, and the
// record is printed with status 128+signal, as time(1) does, and the
// signal in its exit.
func TestRunForwardsSignals(t *testing.T) {
	noCores(t) // SIGQUIT's
	for _, tc := range []struct {
		sig   syscall.Signal
		group bool
	}{
		{syscall.SIGTERM, true}, {syscall.SIGTERM, false},
		{syscall.SIGHUP, true}, {syscall.SIGHUP, false},
		// Not from a terminal (the helper's process group is not its
		// terminal's foreground, if it has one): passed on too.
		{syscall.SIGINT, true}, {syscall.SIGINT, false},
		{syscall.SIGQUIT, false},
	} {
		c := helperCmd("cli", "run", "--json", "--", "sleep", "30")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var errb strings.Builder
		c.Stderr = &errb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Signal once sleep runs (cputime's child has exec'd it).
		for !childIs(c.Process.Pid, "sleep") {
			time.Sleep(time.Millisecond)
		}
		target := c.Process.Pid
		if tc.group {
			target = -target
		}
		if err := syscall.Kill(target, tc.sig); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		want := 128 + int(tc.sig)
		if got := c.ProcessState.ExitCode(); got != want {
			t.Errorf("%v (group %v): status %d, want %d; stderr %s", tc.sig, tc.group, got, want, errb.String())
			continue
		}
		var rec runJSON
		if err := json.Unmarshal([]byte(errb.String()), &rec); err != nil || rec.ExitTime == nil || rec.Name != "sleep" {
			t.Errorf("%v (group %v): no record: %v: %s", tc.sig, tc.group, err, errb.String())
		} else if rec.Exit == nil || rec.Exit.Signal == nil || *rec.Exit.Signal != int(tc.sig) || rec.Exit.Code != nil {
			t.Errorf("%v (group %v): exit %+v", tc.sig, tc.group, rec.Exit)
		}
	}
}

// childIs reports whether pid has a child whose comm is name.
func childIs(pid int, name string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(b)) {
		comm, err := os.ReadFile("/proc/" + c + "/comm")
		if err == nil && strings.TrimSpace(string(comm)) == name {
			return true
		}
	}
	return false
}

// run --tree: a program whose 300 threads each burn 2 ms of their own CPU
// (measured by each thread of itself) and exit, 4 at a time. Every thread
// is in the record with an exit time and a final total from what it
// measured of itself (less the context switches the counters miss, at
// most 0.5 ms; see the README) to 1 ms more; the threads add up to the
// process's exact total (the kernel's process clock at its exit) within
// the same allowance.
func TestRunTreeThreads(t *testing.T) {
	stdout, stderr, status := runCLI(t, System{}, "run", "--tree", "--json", "--", "env", "CPUTIME_CLI_HELPER=threads:300:2:4", os.Args[0], "-test.run=^$")
	if status == exitFailed && strings.Contains(stderr, "not supported") {
		t.Skipf("no recording here: %s", stderr)
	}
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	needRecording(t, rec)
	// Every thread's final records arrive, even where the kernel stops
	// publishing a ring buffer that two CPUs wrote at once: the recorder
	// takes what the kernel wrote past the head (internal/recorder). Only
	// where two CPUs wrote over each other is a record lost, one or two
	// threads each (corrupt_stretches, when the recorder can tell).
	lossy := 2*int(rec.Recording.CorruptStretches) + 1
	if rec.Recording.IncompleteThreads+rec.Recording.RunningThreads > lossy {
		t.Errorf("recording %+v", *rec.Recording)
	}
	// An id can name two threads of the record (ids reused once pids wrap,
	// or steered by another package's test): the one the program reported
	// is the latest of that id created before it first read the wall clock.
	byTID := map[int][]jsonThread{}
	var sum time.Duration
	for _, th := range rec.Threads {
		byTID[th.TID] = append(byTID[th.TID], th)
		sum += time.Duration(th.UserNs + th.KernelNs)
	}
	n, below, lost := 0, 0, 0
	for sc := bufio.NewScanner(strings.NewReader(stdout)); sc.Scan(); n++ {
		var tid int
		var self, born int64
		fmt.Sscan(sc.Text(), &tid, &self, &born)
		var th jsonThread
		ths := byTID[tid]
		ok := len(ths) > 0
		for i, c := range ths {
			at, best := time.Time(c.CreationTime).UnixNano(), time.Time(th.CreationTime).UnixNano()
			if i == 0 || at <= born && (best > born || at > best) {
				th = c
			}
		}
		if !ok || time.Time(th.ExitTime).IsZero() {
			t.Logf("thread %d not in the record with an exit time: %+v", tid, th)
			lost++
			continue
		}
		got := time.Duration(th.UserNs + th.KernelNs)
		// Off by some µs per context switch, more for a switch from
		// another process; with the packages' tests running at once a
		// thread Go had used before can read well below its own clock,
		// or above it at its exit (Go hands its processor on, which may
		// start a thread): up to 10 of 300 such are allowed (see
		// internal/recorder's TestRecordShortThreads).
		switch {
		case got > time.Duration(self)+5*time.Millisecond:
			t.Errorf("thread %d: recorded %v, measured itself %v", tid, got, time.Duration(self))
		case got < time.Duration(self)-500*time.Microsecond || got > time.Duration(self)+time.Millisecond:
			t.Logf("thread %d: recorded %v, measured itself %v", tid, got, time.Duration(self))
			if below++; below > 10 {
				t.Errorf("%d threads more than 0.5 ms below their own clock or 1 ms above", below)
			}
		}
	}
	if lost > lossy {
		t.Errorf("%d threads lost their exit or final count; the recording says %+v", lost, *rec.Recording)
	}
	if n != 300 {
		t.Fatalf("the program reported %d threads", n)
	}
	own := time.Duration(rec.UserNs + rec.KernelNs)
	// The counters miss each exiting thread's last 5-40 µs (after perf's
	// exit hook) and the first instants of each switch to a thread, and
	// count the last instants of each switch away: close on a quiet
	// machine, several percent either way beside the other packages'
	// tests (see internal/recorder; docs/figures.md).
	if d := sum - own; d > own*15/100+time.Millisecond || d < -own*15/100-time.Millisecond {
		t.Errorf("threads sum to %v, the process's exact total %v (wait4: %v)", sum, own, time.Duration(*rec.TotalUserNs+*rec.TotalKernelNs))
		ths := slices.Clone(rec.Threads)
		slices.SortFunc(ths, func(a, b jsonThread) int { return cmp.Compare(b.UserNs+b.KernelNs, a.UserNs+a.KernelNs) })
		for _, th := range ths[:5] {
			t.Logf("busiest: %+v", th)
		}
	}
	if rec.Recording.LostRecords != 0 {
		t.Errorf("recording %+v", *rec.Recording)
	}
	t.Logf("%d threads in the record, sum %v, process %v", len(rec.Threads), sum, own)

	// The human --tree output: every thread listed, with an exit time.
	_, text, status := runCLI(t, System{}, "run", "--tree", "--", "env", "CPUTIME_CLI_HELPER=threads:20:1:2", os.Args[0], "-test.run=^$")
	if status != 0 || !strings.Contains(text, "Threads recorded:") || !strings.Contains(text, "EXITED") {
		t.Fatalf("status %d: %s", status, text)
	}
}

// children is recursive: a shell's child shell's child is under the child.
func TestRunChildrenNested(t *testing.T) {
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", "sh -c '/bin/true; /bin/true'; /bin/true")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	needRecording(t, rec)
	var inner *jsonChild
	for i, c := range rec.Children {
		if c.Name == "sh" {
			inner = &rec.Children[i]
		}
	}
	if inner == nil || len(inner.Children) == 0 {
		t.Fatalf("no nested children: %s", stderr)
	}
	for _, g := range inner.Children {
		if g.PPID != inner.PID || g.Name != "true" || g.ExitTime == nil {
			t.Errorf("grandchild %+v", g)
		}
	}
	if _, n := treeSum(rec.Children); n != rec.Recording.Processes-1 {
		t.Errorf("%d processes under the top, %d recorded", n, rec.Recording.Processes)
	}
}

// --trace and --timeline hand the recording to package timeline's writers
// (here stand-ins), one file each; without a writer they fail clearly,
// create nothing, and leave run CMD's status.
func TestRunDrawings(t *testing.T) {
	dir := t.TempDir()
	trace, html := dir+"/t.json", dir+"/t.html"
	saved, savedHTML := traceWriter, timelineWriter
	defer func() { traceWriter, timelineWriter = saved, savedHTML }()
	traceWriter, timelineWriter = nil, nil
	_, stderr, status := runCLI(t, System{}, "run", "--trace", trace, "--", "true")
	if status == exitFailed && strings.Contains(stderr, "not supported") {
		t.Skipf("no recording here: %s", stderr)
	}
	if status != 0 || !strings.Contains(stderr, trace+": "+errNoWriter.Error()) {
		t.Fatalf("no writer: status %d (want CMD's 0), %s", status, stderr)
	}
	if _, err := os.Lstat(trace); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no writer: %s left behind (%v)", trace, err)
	}
	if left, _ := filepath.Glob(trace + "*"); len(left) > 0 {
		t.Errorf("no writer: %q left behind", left)
	}
	var got []*timeline.Recording
	fake := func(w io.Writer, r *timeline.Recording) error {
		got = append(got, r)
		_, err := fmt.Fprintf(w, "%d processes", len(r.Processes))
		return err
	}
	traceWriter, timelineWriter = fake, fake
	_, stderr, status = runCLI(t, System{}, "run", "--trace", trace, "--timeline="+html, "--", "sh", "-c", "/bin/true")
	if status != 0 || len(got) != 2 || got[0] != got[1] {
		t.Fatalf("status %d, %d recordings: %s", status, len(got), stderr)
	}
	r := got[0]
	if len(r.Processes) < 2 || r.Processes[0].Parent != 0 || r.Processes[1].Parent != r.Processes[0].ID || r.End.Before(r.Start) {
		t.Errorf("recording %+v", r)
	}
	for _, p := range []string{trace, html} {
		if b, err := os.ReadFile(p); err != nil || !strings.HasSuffix(string(b), "processes") {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}
