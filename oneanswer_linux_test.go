package cputime_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/testutil/workload"
)

// One answer per task (DESIGN §4): the same task in the same state gives
// the same creation time, user time and kernel time through every path and
// in every process that asks.

// readEveryPath is the "paths" child: a fresh process that reads process
// pid (stopped by the test) through every path the library has and prints
// one line per answer: "path kind id creation-ns user-ns kernel-ns".
func readEveryPath(arg string) {
	pidArg, order, _ := strings.Cut(arg, ":")
	pid, _ := strconv.Atoi(pidArg)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	say := func(path, kind string, id int, t cputime.Times, err error) {
		if err != nil {
			fmt.Fprintf(w, "error %s %s %d %v\n", path, kind, id, err)
			return
		}
		fmt.Fprintf(w, "%s %s %d %d %d %d\n", path, kind, id, t.Creation.UnixNano(), t.User, t.Kernel)
	}
	var tids []int
	for th, err := range cputime.Threads(pid) {
		if err == nil {
			tids = append(tids, th.ID)
		}
	}
	paths := []func(){
		func() {
			t, err := cputime.ProcessTimes(pid)
			say("ProcessTimes", "process", pid, t, err)
		},
		func() {
			h, err := cputime.OpenProcess(pid)
			if err != nil {
				say("OpenProcess", "process", pid, cputime.Times{}, err)
				return
			}
			defer h.Close()
			for range 2 {
				t, err := h.Times()
				say("OpenProcess", "process", pid, t, err)
			}
		},
		func() {
			info, err := cputime.ProcessInfoOf(pid)
			say("ProcessInfoOf", "process", pid, info.Times, err)
		},
		func() {
			for p, err := range cputime.Processes() {
				if err == nil && p.ID == pid {
					say("Processes", "process", pid, p.Times, nil)
				}
			}
		},
		func() {
			for th, err := range cputime.Threads(pid) {
				say("Threads", "thread", th.ID, th.Times, err)
			}
		},
		func() {
			for th, err := range cputime.AllThreads() {
				if err == nil && th.ProcessID == pid {
					say("AllThreads", "thread", th.ID, th.Times, nil)
				}
			}
		},
		func() {
			for _, tid := range tids {
				t, err := cputime.ThreadTimes(tid)
				say("ThreadTimes", "thread", tid, t, err)
			}
		},
		func() {
			for _, tid := range tids {
				h, err := cputime.OpenThread(tid)
				if err != nil {
					say("OpenThread", "thread", tid, cputime.Times{}, err)
					continue
				}
				for range 2 {
					t, err := h.Times()
					say("OpenThread", "thread", tid, t, err)
				}
				h.Close()
			}
		},
	}
	// No answer may depend on which call came first: the two readers take
	// the paths in opposite orders.
	if order == "reverse" {
		slices.Reverse(paths)
	}
	for _, read := range paths {
		read()
	}
}

type pathAnswer struct {
	path, kind string
	id         int
	creation   int64
	user       int64
	kernel     int64
}

// readPathsInFreshProcess runs the "paths" child on pid and parses its lines.
func readPathsInFreshProcess(t *testing.T, pid int, order string) []pathAnswer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=paths:"+strconv.Itoa(pid)+":"+order)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reader: %v\n%s", err, out)
	}
	var answers []pathAnswer
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "error ") {
			t.Errorf("reader: %s", strings.TrimSpace(line))
			continue
		}
		var a pathAnswer
		if _, err := fmt.Sscanf(line, "%s %s %d %d %d %d", &a.path, &a.kind, &a.id, &a.creation, &a.user, &a.kernel); err != nil {
			t.Fatalf("reader said %q: %v", line, err)
		}
		answers = append(answers, a)
	}
	return answers
}

// stopAndSettle stops process pid with SIGSTOP and returns once every one of
// its threads is stopped and off the CPU: each shows state T and its
// schedstat run time no longer moves.
func stopAndSettle(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	snapshot := func() (string, bool) {
		var b strings.Builder
		all := true
		dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		for _, d := range dirs {
			stat, err1 := os.ReadFile(d + "/stat")
			ss, err2 := os.ReadFile(d + "/schedstat")
			if err1 != nil || err2 != nil {
				return "", false
			}
			fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if fields[0] != "T" {
				all = false
			}
			fmt.Fprintf(&b, "%s %s", d, ss)
		}
		return b.String(), all
	}
	deadline := time.Now().Add(10 * time.Second)
	prev := ""
	for time.Now().Before(deadline) {
		s, stopped := snapshot()
		if stopped && s == prev {
			return
		}
		prev = s
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d did not settle in the stopped state", pid)
}

func TestOneAnswerEveryPathEveryProcess(t *testing.T) {
	c := startChild(t, "mixed:3")
	// Let it run long enough for ticks in both modes on every thread.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st := procStat(t, c.pid())
		if st.utime > 5 && st.stime > 5 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopAndSettle(t, c.pid())

	// Two fresh processes, each through every path, in opposite orders.
	readers := [][]pathAnswer{
		readPathsInFreshProcess(t, c.pid(), "forward"),
		readPathsInFreshProcess(t, c.pid(), "reverse"),
	}
	type key struct {
		kind string
		id   int
	}
	first := map[key]pathAnswer{}
	paths := map[key][]string{}
	for r, answers := range readers {
		for _, a := range answers {
			k := key{a.kind, a.id}
			paths[k] = append(paths[k], a.path)
			f, ok := first[k]
			if !ok {
				first[k] = a
				continue
			}
			if a.user != f.user || a.kernel != f.kernel {
				t.Errorf("%s %d: reader %d via %s says user %v kernel %v; %s said user %v kernel %v",
					a.kind, a.id, r, a.path, time.Duration(a.user), time.Duration(a.kernel),
					f.path, time.Duration(f.user), time.Duration(f.kernel))
			}
			// Within one process every path gives the same creation time
			// (one boot offset); across processes within 100 µs.
			if d := time.Duration(a.creation - f.creation).Abs(); d > 100*time.Microsecond {
				t.Errorf("%s %d: creation via %s differs by %v from %s's", a.kind, a.id, a.path, d, f.path)
			}
		}
	}
	if len(first) < 4 {
		t.Fatalf("only %d tasks read: %v", len(first), paths)
	}
	// Every path answered for the process and for each thread.
	for k, ps := range paths {
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if len(ps) != 4 {
			t.Errorf("%s %d: answered by %v only", k.kind, k.id, ps)
		}
	}
	// Cross-check with the kernel's own accounting of the stopped process:
	// stat's utime+stime is the kernel's adjusted split in whole ticks.
	st := procStat(t, c.pid())
	p := first[key{"process", c.pid()}]
	tick := int64(10 * time.Millisecond)
	n := int64(len(first)) // at most a tick of truncation per thread
	if ku := int64(st.utime) * tick; p.user < ku-tick || p.user > ku+n*tick+int64(st.stime)*tick/5 {
		t.Logf("process user %v, stat utime %v (logged: the two split the same total from different samples)", time.Duration(p.user), time.Duration(ku))
	}
	if total, kt := p.user+p.kernel, int64(st.utime+st.stime)*tick; total < kt || total > kt+n*tick {
		t.Errorf("process total %v, stat's whole ticks %v (+%d ticks of truncation)", time.Duration(total), time.Duration(kt), n)
	}
	if p.kernel == 0 || p.user == 0 {
		t.Errorf("process split user %v kernel %v: the child spent time in both modes", time.Duration(p.user), time.Duration(p.kernel))
	}
}

// pfKthread is PF_KTHREAD (include/linux/sched.h).
const pfKthread = 0x00200000

// statFlags reads field 9 of a stat file directly.
func statFlags(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return flags, err == nil
}

// Kernel threads never run in user mode: every path gives them no user
// time, whatever their tick samples say (a kernel thread no tick has
// sampled yet would otherwise be "all user", the convention for tasks).
func TestKernelThreadsHaveNoUserTime(t *testing.T) {
	kthreads := 0
	for p, err := range cputime.Processes() {
		if err != nil {
			continue
		}
		flags, ok := statFlags(fmt.Sprintf("/proc/%d/stat", p.ID))
		if !ok || flags&pfKthread == 0 {
			continue
		}
		kthreads++
		if p.Times.User != 0 {
			t.Errorf("kernel thread %d (%s): Processes says user %v", p.ID, p.Name, p.Times.User)
		}
		// Twice: a second read of an id takes the pidfd path.
		for range 2 {
			if tm, err := cputime.ProcessTimes(p.ID); err == nil && tm.User != 0 {
				t.Errorf("kernel thread %d (%s): ProcessTimes says user %v", p.ID, p.Name, tm.User)
			}
		}
		for th, err := range cputime.Threads(p.ID) {
			if err == nil && th.Times.User != 0 {
				t.Errorf("kernel thread %d (%s): Threads says user %v", th.ID, th.Name, th.Times.User)
			}
		}
		for range 2 { // a second read takes the pidfd path
			if tm, err := cputime.ThreadTimes(p.ID); err == nil && tm.User != 0 {
				t.Errorf("kernel thread %d (%s): ThreadTimes says user %v", p.ID, p.Name, tm.User)
			}
		}
	}
	if kthreads == 0 {
		t.Skip("no kernel threads visible (a pid namespace without kthreadd)")
	}
}

// Creation times are one value per task in a process, however loaded the
// machine (the boot offset is taken from narrow readings and changed only
// on a confirmed clock step), and fresh processes agree within 100 µs.
func TestCreationStableUnderChurn(t *testing.T) {
	created := workload.ChurnThreads(t, 2)
	self := os.Getpid()
	seen := map[string]map[int64]bool{}
	note := func(path string, tm cputime.Times, err error) {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if seen[path] == nil {
			seen[path] = map[int64]bool{}
		}
		seen[path][tm.Creation.UnixNano()] = true
	}
	deadline := time.Now().Add(2 * time.Second)
	reads := 0
	for time.Now().Before(deadline) {
		info, err := cputime.ProcessInfoOf(1)
		note("ProcessInfoOf(1)", info.Times, err)
		tm, err := cputime.ProcessTimes(1)
		note("ProcessTimes(1)", tm, err)
		tm, err = cputime.ProcessTimes(self)
		note("ProcessTimes(self)", tm, err)
		reads++
	}
	t.Logf("%d reads of each while %d threads were created and ended", reads, created.Load())
	var one int64
	for path, values := range seen {
		if len(values) != 1 {
			t.Errorf("%s: %d distinct creation times", path, len(values))
		}
		if path != "ProcessTimes(self)" {
			for v := range values {
				if one == 0 {
					one = v
				} else if v != one {
					t.Errorf("%s: creation %d, another path %d", path, v, one)
				}
			}
		}
	}
	// Fresh processes, under the same churn, agree with this one.
	for _, order := range []string{"forward", "reverse"} {
		for _, a := range readPathsInFreshProcess(t, 1, order) {
			if a.kind == "process" {
				if d := time.Duration(a.creation - one).Abs(); d > 100*time.Microsecond {
					t.Errorf("a fresh process via %s: creation of pid 1 differs by %v", a.path, d)
				}
			}
		}
	}
}
