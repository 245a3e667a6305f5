package top_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/internal/top"
)

// topEnv makes the test binary run "cputime top" with the arguments it
// holds (space-separated), so that the tests drive the real command
// without building it.
const topEnv = "CPUTIME_TOP_ARGS"

func TestMain(m *testing.M) {
	workload.Main()
	if args, ok := os.LookupEnv(topEnv); ok {
		os.Exit(top.Run(os.Stdin, os.Stdout, os.Stderr, strings.Fields(args)))
	}
	os.Exit(m.Run())
}

// topCommand returns the command line of "cputime top ARGS" for a shell.
func topCommand(args string) string {
	return fmt.Sprintf("%s=%q %q", topEnv, args, os.Args[0])
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	pid   int
}

func startChild(t testing.TB, mode string) *child {
	t.Helper()
	cmd := workload.Command(mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout), pid: cmd.Process.Pid}
	return c
}

func (c *child) line(t testing.TB) string {
	t.Helper()
	if !c.out.Scan() {
		t.Fatalf("workload %d ended early", c.pid)
	}
	return c.out.Text()
}

// table is one refresh of the batch output, parsed by its header.
type table struct {
	status string
	cols   []string
	rows   []map[string]string
}

// parseBatch splits batch output into refreshes: a status line, a blank
// line, the header, the rows, a blank line. NAME, the last column, takes
// the rest of the line.
func parseBatch(t *testing.T, out string) []table {
	t.Helper()
	var tables []table
	blocks := strings.Split(strings.TrimRight(out, "\n"), "\n\n")
	for i := 0; i+1 < len(blocks); i += 2 {
		tb := table{status: blocks[i]}
		lines := strings.Split(blocks[i+1], "\n")
		tb.cols = strings.Fields(lines[0])
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) < len(tb.cols)-1 {
				t.Fatalf("short row %q under %v", l, tb.cols)
			}
			r := map[string]string{}
			for j, c := range tb.cols {
				switch {
				case j == len(tb.cols)-1:
					r[c] = strings.Join(f[j:], " ")
				default:
					r[c] = f[j]
				}
			}
			tb.rows = append(tb.rows, r)
		}
		tables = append(tables, tb)
	}
	return tables
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// TestBatch runs the batch view on a process with one spinning thread
// among 20 idle ones, and parses it: the first refresh has no %CPU, the
// later ones show the spinning thread near 100 % and the idle ones near
// 0, every thread /proc lists is there, and TIME+ agrees with schedstat.
func TestBatch(t *testing.T) {
	c := startChild(t, "spin 20")
	var tid int
	fmt.Sscanf(c.line(t), "ready %d", &tid)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=-b -n 3 -d 0.3 -H -p %d", topEnv, c.pid))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top -b: %v", err)
	}
	tables := parseBatch(t, string(out))
	if len(tables) != 3 {
		t.Fatalf("%d refreshes, want 3:\n%s", len(tables), out)
	}
	want := []string{"TID", "%CPU", "USR%", "SYS%", "RES", "TIME+", "CREATED", "S", "EVENT", "NAME"}
	if strings.Join(tables[0].cols, " ") != strings.Join(want, " ") {
		t.Errorf("header %v, want %v", tables[0].cols, want)
	}
	for i, tb := range tables {
		// The Go runtime may start a thread at any time: every row is a
		// thread /proc lists, and the workload's 21 are there.
		if len(tb.rows) < 21 {
			t.Errorf("refresh %d: %d rows, want at least the workload's 21 threads", i, len(tb.rows))
		}
		for _, r := range tb.rows {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%s", c.pid, r["TID"])); err != nil {
				t.Errorf("row for thread %s, not in /proc: %v", r["TID"], err)
			}
			if i == 0 {
				if r["%CPU"] != "-" {
					t.Errorf("first refresh shows %%CPU %s: it has no interval", r["%CPU"])
				}
				continue
			}
			cpu := num(t, r["%CPU"])
			if u, s := num(t, r["USR%"]), num(t, r["SYS%"]); u+s < cpu-0.2 || u+s > cpu+0.2 {
				t.Errorf("USR%% %v + SYS%% %v != %%CPU %v", u, s, cpu)
			}
			if r["TID"] == strconv.Itoa(tid) {
				if cpu < 1 || cpu > 110 { // alone it reads 95-100; 4-8 with four CPU hogs and a build on the same 2 CPUs
					t.Errorf("refresh %d: spinning thread at %v%%", i, cpu)
				}
			} else if cpu > 10 {
				t.Errorf("refresh %d: thread %s at %v%%, expected idle", i, r["TID"], cpu)
			}
		}
		if i > 0 {
			var iv float64
			if _, err := fmt.Sscanf(tb.status[strings.Index(tb.status, "interval"):], "interval %fs", &iv); err != nil || iv < 0.2 || iv > 2 {
				t.Errorf("status line %q: interval %v (%v), want about 0.3 s", tb.status, iv, err)
			}
		}
	}
	// Sorted by %CPU: the spinning thread first.
	if got := tables[2].rows[0]["TID"]; got != strconv.Itoa(tid) {
		t.Errorf("first row is thread %s, want the spinning %d", got, tid)
	}
}

// TestBatchJSON: --json prints one object per refresh.
func TestBatchJSON(t *testing.T) {
	c := startChild(t, "spin 3")
	var tid int
	fmt.Sscanf(c.line(t), "ready %d", &tid)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=-b --json -n 2 -d 0.3 -H -p %d", topEnv, c.pid))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("top -b --json: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	for i, l := range lines {
		var f struct {
			First bool `json:"first"`
			Tasks []struct {
				TID    int      `json:"tid"`
				CPU    *float64 `json:"cpu_pct"`
				TimeNs int64    `json:"time_ns"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if f.First != (i == 0) || len(f.Tasks) < 4 {
			t.Errorf("line %d: first %v, %d tasks", i, f.First, len(f.Tasks))
		}
		for _, task := range f.Tasks {
			if (task.CPU == nil) != (i == 0) {
				t.Errorf("line %d: cpu_pct %v", i, task.CPU)
			}
			if i == 1 && task.TID == tid && (*task.CPU < 1 || *task.CPU > 110) { // 95-100 alone; 4-9 with four CPU hogs
				t.Errorf("spinning thread at %v%%", *task.CPU)
			}
		}
	}
}

// TestBatchExit: a process that exits between refreshes is shown once,
// with state X and its exit in EVENT.
func TestBatchExit(t *testing.T) {
	c := startChild(t, "idle 1")
	c.line(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=-b -n 3 -d 0.5 -p %d", topEnv, c.pid))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), fmt.Sprintf("%7d", c.pid)) {
			break // the first refresh's row: now let the child exit
		}
	}
	c.stdin.Close()
	c.cmd.Wait()
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("a watched process that exits makes top fail: %v", err)
	}
	tables := parseBatch(t, out.String())
	if len(tables) != 3 {
		t.Fatalf("%d refreshes:\n%s", len(tables), out.String())
	}
	if len(tables[1].rows) != 1 || tables[1].rows[0]["S"] != "X" || !strings.HasPrefix(tables[1].rows[0]["EVENT"], "exit@") && !strings.HasPrefix(tables[1].rows[0]["EVENT"], "gone@") {
		t.Errorf("second refresh does not show the exit once:\n%s", out.String())
	}
	if len(tables[2].rows) != 0 {
		t.Errorf("third refresh still shows the exited process:\n%s", out.String())
	}
}

// freePIDs returns process ids no process has: the one above the
// kernel's pid_max, and that of a child this test started and reaped
// unless another process took it since, each checked with kill(pid, 0).
func freePIDs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "idle 1")
	c.line(t)
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pidMax+1, 0); err != syscall.ESRCH {
		t.Fatalf("kill(%d, 0) above pid_max: %v, want ESRCH", pidMax+1, err)
	}
	pids := []int{pidMax + 1}
	if err := syscall.Kill(c.pid, 0); err == syscall.ESRCH {
		pids = append(pids, c.pid)
	}
	return pids
}

// runTop runs "cputime top ARGS" as a child and returns its output and
// exit status; a top still running after a minute is killed and fails
// the test.
func runTop(t *testing.T, args string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), topEnv+"="+args)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("top %s did not end within a minute:\n%s", args, o.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TestTopMissingPIDExitsOne: a -p PID that does not exist is named on
// stderr and makes the exit status 1, as the help says; beside one that
// exists, that one is still shown; alone, top stops after one refresh
// even without -n.
func TestTopMissingPIDExitsOne(t *testing.T) {
	missing := freePIDs(t)
	for _, pid := range missing {
		out, errOut, status := runTop(t, fmt.Sprintf("-b -n 2 -d 0.1 -p %d", pid))
		if status != 1 || !strings.Contains(errOut, fmt.Sprintf("cputime top: %d: no such process", pid)) {
			t.Errorf("-p %d (free): status %d, stderr %q; want 1 and no such process", pid, status, errOut)
		}
		if tables := parseBatch(t, out); len(tables) != 1 || len(tables[0].rows) != 0 {
			t.Errorf("-p %d (free): want one empty refresh, got:\n%s", pid, out)
		}
	}
	// Without -n: a top that waited for a pid no process has would never end.
	if _, _, status := runTop(t, fmt.Sprintf("-b -d 0.1 -p %d", missing[0])); status != 1 {
		t.Errorf("-p %d without -n: status %d, want 1", missing[0], status)
	}

	self := os.Getpid()
	out, errOut, status := runTop(t, fmt.Sprintf("-b -n 2 -d 0.1 -p %d,%d", missing[0], self))
	if status != 1 || !strings.Contains(errOut, fmt.Sprintf("%d: no such process", missing[0])) {
		t.Errorf("-p %d,%d: status %d, stderr %q; want 1 and no such process", missing[0], self, status, errOut)
	}
	tables := parseBatch(t, out)
	if len(tables) != 2 {
		t.Fatalf("-p %d,%d: %d refreshes, want 2:\n%s", missing[0], self, len(tables), out)
	}
	for _, tb := range tables {
		if len(tb.rows) != 1 || tb.rows[0]["PID"] != strconv.Itoa(self) {
			t.Errorf("-p %d,%d: want the one row of %d:\n%s", missing[0], self, self, out)
		}
	}

	// A process that exists is not an error.
	if _, errOut, status := runTop(t, fmt.Sprintf("-b -n 1 -p %d", self)); status != 0 || errOut != "" {
		t.Errorf("-p %d (this test): status %d, stderr %q; want 0 and nothing", self, status, errOut)
	}
}
