package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A real process that renamed itself with terminal-hostile bytes (ESC,
// U+202E, U+009B, a raw 0x9b, DEL: 13 of comm's 15 bytes), listed by the
// command from the live system: the tables print it as ps does, the JSON
// keeps it.
func TestLiveHostileName(t *testing.T) {
	const script = `printf '\033[31m\342\200\256\302\233\233x\177' > /proc/$$/comm && echo ready && read x`
	cmd := exec.Command("bash", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("bash: %v", err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("child said %q", line)
	}
	pid := cmd.Process.Pid
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(string(comm), "\n")
	if name != "\x1b[31m\u202e\u009b\x9bx\x7f" {
		t.Fatalf("the kernel kept the name as %q", name)
	}
	const shown = "?[31m???x?"

	out, stderr, status := runCLI(t, System{}, fmt.Sprint(pid))
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	if !strings.Contains(out, fmt.Sprintf("process %d (%s):", pid, shown)) || !strings.Contains(out, "  "+shown+"\n") {
		t.Errorf("cputime %d:\n%s", pid, out)
	}
	out, _, _ = runCLI(t, System{})
	var listed bool
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == fmt.Sprint(pid) {
			listed = strings.HasSuffix(line, "  "+shown)
			if !listed {
				t.Errorf("listed as %q", line)
			}
		}
	}
	if !listed {
		t.Errorf("pid %d not listed", pid)
	}
	for i := 0; i < len(out); i++ {
		if c := out[i]; c == 0x1b || c == 0x9b || c == 0x7f {
			t.Fatalf("listing holds byte %#x", c)
		}
	}
	out, _, _ = runCLI(t, System{}, "--json", fmt.Sprint(pid))
	var recs []struct{ Name string }
	if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "\x1b[31m\u202e\u009b\ufffdx\x7f"; recs[0].Name != want {
		t.Errorf("JSON name %q, want %q", recs[0].Name, want)
	}
}

// Errors name the id and the cause once, the same in every subcommand: a
// thread id passed as a PID, and an id no task has.
func TestLiveErrorWording(t *testing.T) {
	// A thread of ours that lives through the test: any other may end
	// (a locked goroutine's) and its id name a new process once pids
	// wrap, which the listing would then print, status 0.
	// A goroutine may lock the main thread (the process itself): while
	// it holds it, the next one gets another.
	tids := make(chan int)
	release := make(chan struct{})
	defer close(release)
	tid := os.Getpid()
	for tid == os.Getpid() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after the test
			tids <- unix.Gettid()
			<-release
		}()
		tid = <-tids
	}
	const missing = 1<<22 + 1 // above the kernel's largest pid_max
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{fmt.Sprint(tid)}, fmt.Sprintf("cputime: %d: is a thread of process %d, not a process\n", tid, os.Getpid())},
		{[]string{"--json", fmt.Sprint(tid)}, fmt.Sprintf("cputime: %d: is a thread of process %d, not a process\n", tid, os.Getpid())},
		{[]string{"wait", fmt.Sprint(tid)}, fmt.Sprintf("cputime: %d: is a thread of process %d, not a process\n", tid, os.Getpid())},
		{[]string{fmt.Sprint(missing)}, fmt.Sprintf("cputime: %d: no such process\n", missing)},
		{[]string{"wait", fmt.Sprint(missing)}, fmt.Sprintf("cputime: %d: no such process\n", missing)},
	} {
		_, stderr, status := runCLI(t, System{}, tc.args...)
		if status != exitFailed || stderr != tc.want {
			t.Errorf("%q: status %d, stderr %q, want %q", tc.args, status, stderr, tc.want)
		}
	}
}
