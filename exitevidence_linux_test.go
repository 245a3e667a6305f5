package cputime_test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

// A process found already exited (a zombie nobody has waited for) is
// reported exited by every path, with the time it really exited, from the
// scheduler's record, not the moment it was looked at.
func TestZombieExitTimeEveryPath(t *testing.T) {
	c := startChild(t, "exitstamp")
	c.stdin.Close()
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	lastWords := time.Unix(0, ns) // printed just before it exited
	// Wait until it is a zombie (state Z), then let time pass, so that the
	// moment of looking is far from the moment of exiting.
	deadline := time.Now().Add(10 * time.Second)
	for procStatState(t, c.pid()) != "Z" {
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	looked := time.Now()

	check := func(path string, tm cputime.Times, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		switch tm.ExitSource {
		case cputime.ExitScheduler:
			t.Logf("%s: exit %v after its last words, found %v later", path, tm.Exit.Sub(lastWords), looked.Sub(tm.Exit))
			// The exit follows its last words by the end of os.Exit,
			// tens of ms beside the other packages' tests. The moment
			// of looking is at least 300 ms after, so 200 ms still
			// tells the exit from the look.
			if tm.Exit.Before(lastWords) || tm.Exit.After(lastWords.Add(200*time.Millisecond)) {
				t.Errorf("%s: exit %v, %v after its last words (printed at %v)", path, tm.Exit, tm.Exit.Sub(lastWords), lastWords)
			}
		case cputime.ExitNoLaterThan:
			t.Logf("%s: no scheduler record (CONFIG_SCHED_DEBUG, or its CPU is outside our cpuset): exit %v, found at %v", path, tm.Exit, looked)
			if tm.Exit.Before(looked) {
				t.Errorf("%s: an upper bound %v before the moment of looking %v", path, tm.Exit, looked)
			}
		default:
			t.Errorf("%s: exit source %v (exit %v) for a zombie", path, tm.ExitSource, tm.Exit)
		}
	}
	tm, err := cputime.ProcessTimes(c.pid())
	check("ProcessTimes", tm, err)
	info, err := cputime.ProcessInfoOf(c.pid())
	check("ProcessInfoOf", info.Times, err)
	found := false
	for p, err := range cputime.Processes() {
		if err == nil && p.ID == c.pid() {
			found = true
			check("Processes", p.Times, nil)
		}
	}
	if !found {
		t.Error("Processes does not list the zombie")
	}
	h := mustOpenProcess(t, c.pid())
	tm, err = h.Times()
	check("OpenProcess", tm, err)
}

// procStatState reads a process's state letter from /proc directly.
func procStatState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))[0]
}
