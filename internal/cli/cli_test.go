package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cputime/cputime"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fake is a fixed Source: the golden files must not depend on the machine.
type fake struct {
	procs   []cputime.ProcessInfo
	threads map[int][]cputime.ThreadInfo
	errs    map[int]error // what Process(pid) fails with, if not "not found"
}

func (f fake) Processes() iter.Seq2[cputime.ProcessInfo, error] {
	return func(yield func(cputime.ProcessInfo, error) bool) {
		for _, p := range f.procs {
			if !yield(p, nil) {
				return
			}
		}
	}
}

func (f fake) Process(pid int) (cputime.ProcessInfo, error) {
	if err := f.errs[pid]; err != nil {
		return cputime.ProcessInfo{}, err
	}
	for _, p := range f.procs {
		if p.ID == pid {
			return p, nil
		}
	}
	return cputime.ProcessInfo{}, fmt.Errorf("reading process %d: %w", pid, cputime.ErrNotFound)
}

func (f fake) Threads(pid int) iter.Seq2[cputime.ThreadInfo, error] {
	return func(yield func(cputime.ThreadInfo, error) bool) {
		ts, ok := f.threads[pid]
		if !ok {
			yield(cputime.ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", pid, cputime.ErrNotFound))
			return
		}
		for _, t := range ts {
			if !yield(t, nil) {
				return
			}
		}
	}
}

var base = time.Date(2026, 11, 22, 8, 30, 0, 123456789, time.UTC)

func fixture() fake {
	times := func(created time.Duration, user, kernel time.Duration) cputime.Times {
		return cputime.Times{Creation: base.Add(created), User: user, Kernel: kernel}
	}
	return fake{
		procs: []cputime.ProcessInfo{
			{ID: 1, Name: "init", Threads: 1, Times: times(0, 1234567*time.Microsecond, 2*time.Second+345*time.Millisecond)},
			{ID: 4242, ParentID: 1, Name: "a) (b", Threads: 3, Times: times(time.Hour, 3*time.Hour+2*time.Minute+1500*time.Millisecond, 61*time.Second)},
			{ID: 77, ParentID: 1, Name: "tab\tnew\nline", Threads: 1, Times: times(2*time.Minute, 7*time.Microsecond, 0)},
		},
		threads: map[int][]cputime.ThreadInfo{
			1: {{ID: 1, ProcessID: 1, Name: "init", Times: times(0, 1234567*time.Microsecond, 2*time.Second+345*time.Millisecond)}},
			4242: {
				{ID: 4242, ProcessID: 4242, Name: "a) (b", Times: times(time.Hour, time.Hour, 60*time.Second)},
				{ID: 4243, ProcessID: 4242, Name: "worker 1", Times: times(time.Hour+time.Millisecond, 2*time.Hour+2*time.Minute+1500*time.Millisecond, time.Second)},
				{ID: 4250, ProcessID: 4242, Name: "idle", Times: times(time.Hour+90*time.Second, 0, 0)},
			},
			77: {{ID: 77, ProcessID: 77, Name: "tab\tnew\nline", Times: times(2*time.Minute, 7*time.Microsecond, 0)}},
		},
		errs: map[int]error{
			5:    fmt.Errorf("opening process 5: %w", cputime.ErrAccessDenied),
			1235: &notProcessError{id: 1235, owner: 1234, err: fmt.Errorf("reading process 1235: %w", cputime.ErrNotFound)},
		},
	}
}

// hostile is a fixture of names a task can give itself to attack the
// terminal that lists it: every one must print as ps prints it.
func hostile() fake {
	var procs []cputime.ProcessInfo
	threads := map[int][]cputime.ThreadInfo{}
	for i, name := range hostileNames {
		p := cputime.ProcessInfo{ID: 100 + i, ParentID: 1, Name: name.in, Threads: 1,
			Times: cputime.Times{Creation: base, User: time.Duration(len(hostileNames)-i) * time.Second}}
		procs = append(procs, p)
		threads[p.ID] = []cputime.ThreadInfo{{ID: p.ID, ProcessID: p.ID, Name: name.in, Times: p.Times}}
	}
	return fake{procs: procs, threads: threads}
}

var hostileNames = []struct{ in, out string }{
	{"plain name", "plain name"},
	{"\x1b[2Jclear", "?[2Jclear"},            // ESC: a CSI sequence
	{"\u009b2Jc1csi", "?2Jc1csi"},            // U+009B: the one-rune CSI (C1)
	{"raw\x9b2J", "raw?2J"},                  // 0x9b alone: invalid UTF-8, a CSI to 8-bit terminals
	{"evil\u202Egpj.exe", "evil?gpj.exe"},    // RIGHT-TO-LEFT OVERRIDE
	{"\u2066iso\u2069late", "?iso?late"},     // LEFT-TO-RIGHT ISOLATE, POP DIRECTIONAL ISOLATE
	{"\u202Aem\u202Cbed", "?em?bed"},         // LEFT-TO-RIGHT EMBEDDING, POP DIRECTIONAL FORMATTING
	{"zero\u200Dwidth\uFEFF", "zero?width?"}, // ZWJ, BOM: invisible format characters
	{"del\x7f\x00nul", "del??nul"},
	{"line\u2028sep", "line?sep"},
	{"bad\xff\xfeutf8\xc3", "bad??utf8?"},
	{"caf\u00e9 \u4e16\u754c", "caf\u00e9 \u4e16\u754c"}, // printable non-ASCII stays
}

// JSON keeps each name exact (encoding/json's U+FFFD for each byte of
// invalid UTF-8 aside) while escaping what a terminal would act on.
func TestHostileNamesJSON(t *testing.T) {
	stdout, stderr, status := runCLI(t, hostile(), "--json")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	for _, r := range stdout {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Errorf("rune %U in the JSON output", r)
		}
	}
	var got []struct {
		PID  int    `json:"pid"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	for _, p := range hostile().procs {
		var b strings.Builder
		for i := 0; i < len(p.Name); {
			r, size := utf8.DecodeRuneInString(p.Name[i:])
			b.WriteRune(r) // RuneError for each invalid byte, as encoding/json
			i += size
		}
		want[p.ID] = b.String()
	}
	for _, p := range got {
		if p.Name != want[p.PID] {
			t.Errorf("pid %d: name %q, want %q", p.PID, p.Name, want[p.PID])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d", len(got), len(want))
	}
}

func TestSanitize(t *testing.T) {
	for _, n := range hostileNames {
		if got := sanitize(n.in); got != n.out {
			t.Errorf("sanitize(%q) = %q, want %q", n.in, got, n.out)
		}
	}
}

// Every text output prints names through sanitize; JSON keeps them, as
// encoding/json escapes them.
func TestHostileNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"hostile.txt", nil},
		{"hostile-pids.txt", []string{"101", "102", "103", "104"}},
		{"hostile.json", []string{"--json", "104"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, status := runCLI(t, hostile(), tc.args...)
			if status != 0 {
				t.Errorf("status %d (stderr %q)", status, stderr)
			}
			for i := 0; i < len(stdout); i++ {
				if c := stdout[i]; (c < 0x20 && c != '\n') || c == 0x7f || c == 0x9b || c == 0x1b {
					t.Errorf("byte %#x at %d of the output", c, i)
				}
			}
			for _, r := range stdout {
				if r != '\n' && !unicode.IsPrint(r) {
					t.Errorf("rune %U in the output", r)
				}
			}
			golden(t, tc.name, stdout+"--- stderr\n"+stderr)
		})
	}
}

// fakeCycles is a fixed Cycles: a round frequency, and idle cycles of
// three CPUs, one of them offline (0).
type fakeCycles struct{ err error }

func (f fakeCycles) ReferenceFrequency() (cputime.CycleFrequency, error) {
	if f.err != nil {
		return cputime.CycleFrequency{}, f.err
	}
	return cputime.CycleFrequency{Hz: 2_500_000_000, Source: "fixture"}, nil
}

func (f fakeCycles) IdleProcessorCycleTimes() ([]uint64, error) {
	if f.err != nil {
		return nil, f.err
	}
	return []uint64{12_345_678_901_234, 0, 1<<64 - 1}, nil
}

func runCLI(t *testing.T, src Source, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var cyc Cycles = fakeCycles{}
	if _, live := src.(System); live {
		cyc = nil
	}
	return runCLIWith(t, src, cyc, args...)
}

func runCLIWith(t *testing.T, src Source, cyc Cycles, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return runEnv(t, Env{Source: src, Cycles: cyc}, args...)
}

// runEnv runs the command line in env, with empty input, its output
// captured and instants shown in UTC+1.
func runEnv(t *testing.T, env Env, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errb bytes.Buffer
	env.Stdin, env.Stdout, env.Stderr, env.Location = strings.NewReader(""), &out, &errb, time.FixedZone("UTC+1", 3600)
	status = Run(env, args)
	return out.String(), errb.String(), status
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		status int
	}{
		{"processes.txt", nil, 0},
		{"processes.json", []string{"--json"}, 0},
		{"processes-threads.json", []string{"--json", "-H"}, 0},
		{"processes-threads.txt", []string{"--threads"}, 0},
		{"pids.txt", []string{"4242", "1"}, 0},
		{"pids.json", []string{"4242", "--json"}, 0},
		{"missing.txt", []string{"1", "999", "77"}, 1},
		{"missing.json", []string{"--json", "999", "1"}, 1},
		{"errors.txt", []string{"5", "1235", "999", "1"}, 1},
		{"cpus.txt", []string{"cpus"}, 0},
		{"cpus.json", []string{"cpus", "--json"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, status := runCLI(t, fixture(), tc.args...)
			if status != tc.status {
				t.Errorf("status %d, want %d (stderr %q)", status, tc.status, stderr)
			}
			golden(t, tc.name, stdout+"--- stderr\n"+stderr)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"abc"}, {"0"}, {"-5"}, {"--bogus"}, {"99999999999"}, {"1.5"},
		{"+5"}, {"05"}, {"-0"}, {" 5"}, {"5 "}, {"5x"}, {"0x5"}, {"1e3"}, {""}, {"\u0665"}, {"00"}, {"1", "+1"}} {
		stdout, stderr, status := runCLI(t, fixture(), args...)
		if status != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "cputime: ") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, status, stdout, stderr)
		}
	}
	if stdout, stderr, status := runCLI(t, fixture(), "--json", "--", "1"); status != 0 || !strings.HasPrefix(stdout, "[") {
		t.Errorf("--json -- 1: status %d, stderr %q", status, stderr)
	}
	if _, stderr, status := runCLI(t, fixture(), "--", "--json"); status != exitUsage {
		t.Errorf("after --, --json is a PID: status %d, stderr %q", status, stderr)
	}
	stdout, _, status := runCLI(t, fixture(), "-h")
	if status != 0 || !strings.Contains(stdout, "usage: cputime") {
		t.Errorf("-h: status %d, %q", status, stdout)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                           "0.000s",
		999 * time.Microsecond:      "0.000s",
		1234 * time.Millisecond:     "1.234s",
		59999 * time.Millisecond:    "59.999s",
		time.Minute:                 "1m00.000s",
		time.Hour + 2*time.Second:   "1h00m02.000s",
		100*time.Hour + time.Minute: "100h01m00.000s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// The live system, end to end: this test process as the command sees it,
// checked against /proc read directly.
func TestLiveSelf(t *testing.T) {
	stdout, stderr, status := runCLI(t, System{}, "--json", fmt.Sprint(os.Getpid()))
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d records", len(got))
	}
	p := got[0]
	// The name the system gives the process: the kernel's comm on Linux,
	// the image name on Windows.
	var name string
	if runtime.GOOS == "linux" {
		comm, _ := os.ReadFile("/proc/self/comm")
		name = strings.TrimSpace(string(comm))
	} else if exe, err := os.Executable(); err == nil {
		name = filepath.Base(exe)
	}
	if p["pid"] != float64(os.Getpid()) || !strings.EqualFold(p["name"].(string), name) || p["exit_time"] != nil {
		t.Errorf("record %v", p)
	}
	created, err := time.Parse(time.RFC3339Nano, p["creation_time"].(string))
	if err != nil || time.Since(created) < 0 || time.Since(created) > time.Hour {
		t.Errorf("creation_time %v: %v", p["creation_time"], err)
	}
	threads := p["threads"].([]any)
	if len(threads) == 0 {
		t.Errorf("no threads listed")
	}
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil && len(threads) > len(tasks)+8 {
		t.Errorf("%d threads listed, /proc/self/task has %d", len(threads), len(tasks))
	}
	for _, key := range []string{"user_ns", "kernel_ns"} {
		if _, ok := p[key].(float64); !ok {
			t.Errorf("%s = %v", key, p[key])
		}
	}
}

func TestLiveAll(t *testing.T) {
	stdout, stderr, status := runCLI(t, System{})
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if !strings.HasPrefix(stdout, "    PID") && !strings.Contains(strings.SplitN(stdout, "\n", 2)[0], "PID") {
		t.Errorf("no header: %q", stdout[:min(len(stdout), 200)])
	}
	if !strings.Contains(stdout, fmt.Sprintf(" %d ", os.Getpid())) {
		t.Errorf("own pid %d not listed", os.Getpid())
	}
	_, _, status = runCLI(t, System{}, fmt.Sprint(1<<22+1))
	if status != exitFailed {
		t.Errorf("missing pid: status %d", status)
	}
}

// Without a reference frequency the command still lists times: cycles are
// null in JSON and "-" in tables, and "cpus" fails with the reason.
func TestNoFrequency(t *testing.T) {
	noFreq := fakeCycles{err: fmt.Errorf("cycle times on plan9: %w", cputime.ErrNotSupported)}
	for _, tc := range []struct {
		name   string
		args   []string
		status int
	}{
		{"nofreq.json", []string{"--json", "1"}, 0},
		{"nofreq.txt", nil, 0},
		{"nofreq-cpus.txt", []string{"cpus"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, status := runCLIWith(t, fixture(), noFreq, tc.args...)
			if status != tc.status {
				t.Errorf("status %d, want %d (stderr %q)", status, tc.status, stderr)
			}
			golden(t, tc.name, stdout+"--- stderr\n"+stderr)
		})
	}
}

func TestCPUsUsage(t *testing.T) {
	if _, stderr, status := runCLI(t, fixture(), "cpus", "3"); status != exitUsage || !strings.Contains(stderr, "usage: cputime cpus") {
		t.Errorf("cpus 3: status %d, stderr %q", status, stderr)
	}
	if stdout, _, status := runCLI(t, fixture(), "cpus", "-h"); status != 0 || !strings.HasPrefix(stdout, "usage: cputime cpus") {
		t.Errorf("cpus -h: status %d, %q", status, stdout)
	}
}

// The live "cpus": one entry per present CPU, and a frequency a machine
// could have, checked against the kernel's own lists.
func TestLiveCPUs(t *testing.T) {
	stdout, stderr, status := runCLI(t, System{}, "cpus", "--json")
	if status != 0 {
		if strings.Contains(stderr, cputime.ErrNotSupported.Error()) {
			t.Skip(stderr)
		}
		t.Fatalf("status %d: %s", status, stderr)
	}
	var got struct {
		Hz     uint64 `json:"cycle_frequency_hz"`
		Source string `json:"frequency_source"`
		CPUs   []struct {
			CPU        int    `json:"cpu"`
			IdleCycles uint64 `json:"idle_cycles"`
		} `json:"cpus"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Hz < 1e6 || got.Hz > 1e10 || got.Source == "" {
		t.Errorf("frequency %d Hz from %q", got.Hz, got.Source)
	}
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skip(err)
	}
	if len(got.CPUs) == 0 {
		t.Fatalf("no CPUs (online: %s)", online)
	}
	for i, c := range got.CPUs {
		if c.CPU != i {
			t.Errorf("entry %d is CPU %d", i, c.CPU)
		}
	}
}

// countingCycles counts the calls that may cost a calibration.
type countingCycles struct {
	fakeCycles
	calls *int
}

func (c countingCycles) ReferenceFrequency() (cputime.CycleFrequency, error) {
	*c.calls++
	return c.fakeCycles.ReferenceFrequency()
}

// The frequency is asked for only when a cycle count derived from it is
// printed: not for output with no records, not for processes whose native
// count the system gave (Windows), and once however many rows need it.
func TestFrequencyLazy(t *testing.T) {
	native := fixture()
	for i := range native.procs {
		native.procs[i].Cycles = uint64(1000 + i)
	}
	for _, tc := range []struct {
		src   fake
		args  []string
		calls int
	}{
		{fixture(), []string{"999"}, 0},
		{fixture(), []string{"--json", "999"}, 0},
		{native, nil, 0},
		{fixture(), nil, 1},
		{fixture(), []string{"4242", "1"}, 1},
		{native, []string{"4242"}, 1}, // its threads' cycles are derived
	} {
		calls := 0
		stdout, _, _ := runCLIWith(t, tc.src, countingCycles{calls: &calls}, tc.args...)
		if calls != tc.calls {
			t.Errorf("%q: %d frequency reads, want %d", tc.args, calls, tc.calls)
		}
		if tc.src.procs[0].Cycles != 0 && len(tc.args) == 0 && !strings.Contains(stdout, " 1000 ") {
			t.Errorf("native cycle count not shown:\n%s", stdout)
		}
	}
}

// writeCounter counts the writes that reach the output.
type writeCounter struct{ n int }

func (w *writeCounter) Write(b []byte) (int, error) { w.n++; return len(b), nil }

// The output is buffered: a 1000-thread table reaches the output in a few
// writes, not one per cell.
func TestOutputBuffered(t *testing.T) {
	f := fixture()
	var ts []cputime.ThreadInfo
	for i := range 1000 {
		ts = append(ts, cputime.ThreadInfo{ID: 5000 + i, ProcessID: 4242, Name: "worker", Times: cputime.Times{Creation: base, User: time.Duration(i) * time.Millisecond}})
	}
	f.threads[4242] = ts
	var w writeCounter
	var errb bytes.Buffer
	if status := Run(Env{Stdout: &w, Stderr: &errb, Source: f, Location: time.UTC, Cycles: fakeCycles{}}, []string{"4242"}); status != 0 {
		t.Fatalf("status %d: %s", status, errb.String())
	}
	if w.n > 4 {
		t.Errorf("%d writes for a 1000-thread table", w.n)
	}
}

// A thread id passed as a PID says whose thread it is, on every system that
// can tell (Linux: /proc/TID/status; Windows: the thread snapshot).
func TestLiveThreadIDAsPID(t *testing.T) {
	tid, pid := 0, os.Getpid()
	for th, err := range cputime.Threads(pid) {
		if err == nil && th.ID != pid {
			tid = th.ID
			break
		}
	}
	if tid == 0 {
		t.Skip("no second thread in the test process")
	}
	want := fmt.Sprintf("cputime: %d: is a thread of process %d, not a process\n", tid, pid)
	for _, args := range [][]string{{fmt.Sprint(tid)}, {"wait", fmt.Sprint(tid)}} {
		_, stderr, status := runCLI(t, System{}, args...)
		if status != exitFailed || stderr != want {
			t.Errorf("%q: status %d, stderr %q, want %q", args, status, stderr, want)
		}
	}
}
