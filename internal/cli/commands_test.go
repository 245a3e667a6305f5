package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// help, version and their option forms: exit 0, the right text on stdout,
// nothing on stderr.
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // a line the output starts with
	}{
		{[]string{"help"}, "usage: cputime [--json]"},
		{[]string{"-h"}, "usage: cputime [--json]"},
		{[]string{"--help"}, "usage: cputime [--json]"},
		{[]string{"help", "run"}, "usage: cputime run "},
		{[]string{"run", "--help"}, "usage: cputime run "},
		{[]string{"help", "wait"}, "usage: cputime wait "},
		{[]string{"wait", "-h"}, "usage: cputime wait "},
		{[]string{"help", "top"}, "usage: cputime top "},
		{[]string{"top", "-h"}, "usage: cputime top "},
		{[]string{"help", "cpus"}, "usage: cputime cpus"},
		{[]string{"help", "exits"}, "usage: cputime exits "},
		{[]string{"exits", "--help"}, "usage: cputime exits "},
		{[]string{"help", "completion"}, "usage: cputime completion "},
		{[]string{"help", "version"}, "usage: cputime version"},
		{[]string{"help", "help"}, "usage: cputime help"},
		{[]string{"version"}, "cputime "},
		{[]string{"--version"}, "cputime "},
		{[]string{"--json", "--version"}, "cputime "},
	} {
		stdout, stderr, status := runCLI(t, fixture(), tc.args...)
		if status != exitOK || stderr != "" || !strings.HasPrefix(stdout, tc.want) {
			t.Errorf("%q: status %d, stderr %q, stdout %.60q: want %q first", tc.args, status, stderr, stdout, tc.want)
		}
	}
	// Every help fits an 80-column terminal.
	for _, c := range append(commands(), command{name: "", help: usageText}) {
		for _, l := range strings.Split(c.help(), "\n") {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("help %s: a line of %d columns: %q", c.name, n, l)
			}
		}
	}
	// The overview names every command, each with its summary.
	stdout, _, _ := runCLI(t, fixture(), "help")
	for _, c := range commands() {
		if !regexp.MustCompile(`(?m)^  ` + c.name + ` +` + regexp.QuoteMeta(c.summary) + `$`).MatchString(stdout) {
			t.Errorf("help does not list %s with %q:\n%s", c.name, c.summary, stdout)
		}
	}
}

// The version line is the build information's, checked against
// runtime/debug directly.
func TestVersionLine(t *testing.T) {
	stdout, _, _ := runCLI(t, fixture(), "version")
	line := strings.TrimSuffix(stdout, "\n")
	if strings.Contains(line, "\n") {
		t.Fatalf("version printed more than one line: %q", stdout)
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	for _, want := range []string{bi.GoVersion, runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(line, want) {
			t.Errorf("version %q lacks %q", line, want)
		}
	}
}

// A word that is not a command gets "unknown command", the closest command
// when one is close, and exit status 2; a mistyped option the same; PIDs
// still work as before.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"hlep"}, `cputime: unknown command "hlep"; did you mean "help"?`},
		{[]string{"verison"}, `cputime: unknown command "verison"; did you mean "version"?`},
		{[]string{"tpo", "-b"}, `cputime: unknown command "tpo"; did you mean "top"?`},
		{[]string{"frobnicate"}, `cputime: unknown command "frobnicate"` + "\n"},
		{[]string{"help", "exit"}, `cputime: help: unknown command "exit"; did you mean "exits"?`},
		{[]string{"--jsno"}, `cputime: unknown option --jsno; did you mean "--json"?`},
		{[]string{"--thread"}, `cputime: unknown option --thread; did you mean "--threads"?`},
		{[]string{"run", "--tre", "true"}, `cputime: run: unknown option --tre; did you mean "--tree"?`},
		{[]string{"wait", "--jsn", "1"}, `cputime: wait: unknown option --jsn; did you mean "--json"?`},
		{[]string{"cpus", "--josn"}, `cputime: cpus: unknown option --josn; did you mean "--json"?`},
		{[]string{"exits", "--duraton", "1s"}, `cputime: exits: unknown option --duraton; did you mean "--duration"?`},
		{[]string{"exits", "--pdi=3"}, `cputime: exits: unknown option --pdi=3; did you mean "--pid"?`},
		{[]string{"top", "--jsno"}, `cputime top: unknown option --jsno; did you mean "--json"?`},
		{[]string{"completion", "bsh"}, `cputime: completion: unknown shell "bsh"; did you mean "bash"?`},
		{[]string{"version", "x"}, `cputime: version: unexpected argument x`},
		{[]string{"help", "run", "wait"}, `cputime: help: want one command`},
	} {
		stdout, stderr, status := runCLI(t, fixture(), tc.args...)
		if status != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: status %d, stdout %.40q, stderr %q: want 2 and %q", tc.args, status, stdout, stderr, tc.want)
		}
	}
	if stdout, stderr, status := runCLI(t, fixture(), "1"); status != exitOK || !strings.HasPrefix(stdout, "process 1 (init)") {
		t.Errorf("a PID: status %d, %q, %q", status, stdout, stderr)
	}
	if _, stderr, status := runCLI(t, fixture(), "12abc"); status != exitUsage || !strings.Contains(stderr, "invalid PID") {
		t.Errorf("12abc: status %d, %q: want invalid PID", status, stderr)
	}
}

// The listing's JSON carries threads only with -H (or --threads): without,
// "threads" is null and thread_count says how many there are; with, the
// threads are listed as for PIDs.
func TestListingThreads(t *testing.T) {
	decode := func(args ...string) []map[string]any {
		t.Helper()
		stdout, stderr, status := runCLI(t, fixture(), args...)
		if status != exitOK {
			t.Fatalf("%q: status %d: %s", args, status, stderr)
		}
		var out []map[string]any
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return out
	}
	for _, p := range decode("--json") {
		if v, ok := p["threads"]; !ok || v != nil {
			t.Errorf("--json: process %v has threads %v (present %v), want null", p["pid"], v, ok)
		}
		if _, ok := p["thread_count"].(float64); !ok {
			t.Errorf("--json: process %v has no thread_count", p["pid"])
		}
	}
	for _, flag := range []string{"-H", "--threads"} {
		for _, p := range decode("--json", flag) {
			th, ok := p["threads"].([]any)
			if !ok || p["pid"] == 4242.0 && len(th) != 3 {
				t.Errorf("--json %s: process %v threads %v", flag, p["pid"], p["threads"])
			}
		}
	}
	stdout, _, _ := runCLI(t, fixture(), "-H")
	if !strings.Contains(stdout, "process 4242 (a) (b)") || !strings.Contains(stdout, "TID") {
		t.Errorf("-H: want the thread tables:\n%s", stdout)
	}
}

// Every JSON object the listing and PIDs print has the same keys, whatever
// their values: a consumer never meets a missing field.
func TestJSONFieldsAlwaysPresent(t *testing.T) {
	keys := func(m map[string]any) []string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	stdout, _, _ := runCLI(t, fixture(), "--json", "-H")
	var procs []map[string]any
	if err := json.Unmarshal([]byte(stdout), &procs); err != nil {
		t.Fatal(err)
	}
	want := []string{"access_denied", "creation_time", "cycles", "exit_time", "kernel_ns", "name", "pid", "thread_count", "threads", "user_ns"}
	wantT := []string{"creation_time", "cycles", "estimated_ns", "exit_time", "incomplete", "kernel_ns", "name", "split_shared", "tid", "user_ns"}
	for _, p := range procs {
		if got := keys(p); !slices.Equal(got, want) {
			t.Errorf("process %v: keys %q, want %q", p["pid"], got, want)
		}
		th, _ := p["threads"].([]any)
		for _, x := range th {
			if got := keys(x.(map[string]any)); !slices.Equal(got, wantT) {
				t.Errorf("thread of %v: keys %q, want %q", p["pid"], got, wantT)
			}
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"300ms": 300 * time.Millisecond, "1.5s": 1500 * time.Millisecond, "2m": 2 * time.Minute,
		"10": 10 * time.Second, "0.3": 300 * time.Millisecond, "1h30m": 90 * time.Minute,
	} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1s", "0s", "soon", "1e99", "NaN", "-3", "Inf"} {
		if d, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, d)
		}
	}
}

// The bash script, loaded into a real bash, completes commands, options,
// PIDs and files as a user would see them.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	stdout, _, status := runCLI(t, fixture(), "completion", "bash")
	if status != exitOK {
		t.Fatal(status)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "cputime.bash")
	os.WriteFile(script, []byte(stdout), 0o644)
	os.WriteFile(filepath.Join(dir, "trace-file.json"), nil, 0o644)
	complete := func(words ...string) []string {
		t.Helper()
		// COMP_WORDS as bash splits the line; the last word is the one
		// being completed.
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cputime; printf '%s\n' "${COMPREPLY[@]}"`, "x", script)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v: %s", words, err, out)
		}
		return strings.Fields(string(out))
	}
	has := func(got []string, want ...string) bool {
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	}
	if got := complete("cputime", "t"); !slices.Equal(got, []string{"top"}) {
		t.Errorf("cputime t<TAB>: %q, want top", got)
	}
	if got := complete("cputime", "co"); !slices.Equal(got, []string{"completion"}) {
		t.Errorf("cputime co<TAB>: %q", got)
	}
	if got := complete("cputime", "--j"); !slices.Equal(got, []string{"--json"}) {
		t.Errorf("cputime --j<TAB>: %q", got)
	}
	if got := complete("cputime", "top", "-"); !has(got, "-b", "-n", "-d", "-p", "-H", "--json") {
		t.Errorf("cputime top -<TAB>: %q", got)
	}
	if got := complete("cputime", "exits", "--d"); !slices.Equal(got, []string{"--duration"}) {
		t.Errorf("cputime exits --d<TAB>: %q", got)
	}
	if got := complete("cputime", "completion", ""); !has(got, "bash", "zsh") {
		t.Errorf("cputime completion <TAB>: %q", got)
	}
	if got := complete("cputime", "help", "ex"); !slices.Equal(got, []string{"exits"}) {
		t.Errorf("cputime help ex<TAB>: %q", got)
	}
	if got := complete("cputime", "run", "--trace", "trace-"); !slices.Equal(got, []string{"trace-file.json"}) {
		t.Errorf("cputime run --trace trace-<TAB>: %q", got)
	}
	// PIDs come from /proc: this process is one of them.
	if runtime.GOOS == "linux" {
		self := strconv.Itoa(os.Getpid())
		if got := complete("cputime", "wait", self); !slices.Contains(got, self) {
			t.Errorf("cputime wait %s<TAB>: %q", self, got)
		}
		if got := complete("cputime", "top", "-p", self); !slices.Contains(got, self) {
			t.Errorf("cputime top -p %s<TAB>: %q", self, got)
		}
	}
}

// The zsh script is valid zsh (where zsh is installed) and names every
// command.
func TestZshCompletion(t *testing.T) {
	stdout, _, status := runCLI(t, fixture(), "completion", "zsh")
	if status != exitOK || !strings.HasPrefix(stdout, "#compdef cputime\n") {
		t.Fatalf("status %d: %.80q", status, stdout)
	}
	for _, c := range commands() {
		if !strings.Contains(stdout, "'"+c.name+":") {
			t.Errorf("zsh script lacks command %s", c.name)
		}
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not found (apt-get install zsh): its syntax is not checked")
	}
	f := filepath.Join(t.TempDir(), "_cputime")
	os.WriteFile(f, []byte(stdout), 0o644)
	if out, err := exec.Command(zsh, "-n", f).CombinedOutput(); err != nil {
		t.Errorf("zsh -n: %v: %s", err, out)
	}
}
