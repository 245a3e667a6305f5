package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/jobtree"
	"github.com/cputime/cputime/internal/testutil/workload"
)

// The test binary doubles as the programs these tests run: with
// CPUTIME_CLI_HELPER set it does that job (internal/testutil/workload's Job: burn:MS,
// tree) and exits before any test runs.
func init() {
	job := os.Getenv(cliHelperEnv)
	if job == "" {
		return
	}
	os.Unsetenv(cliHelperEnv)
	workload.Job(job, cliHelperEnv) // returns for the others
	os.Exit(92)
}

const cliHelperEnv = "CPUTIME_CLI_HELPER"

// underWine: Wine's ntdll exports wine_get_version, Windows' does not.
var underWine = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil

type runJSON struct {
	jsonProcess
	TotalUserNs    *int64         `json:"total_user_ns"`
	TotalKernelNs  *int64         `json:"total_kernel_ns"`
	TotalPrecision string         `json:"total_precision"`
	Children       []jsonChild    `json:"children"`
	Recording      *jsonRecording `json:"recording"`
}

// burned reads the "burned PID USER_NS KERNEL_NS" lines the workload's
// processes print: each one's own times, as it read them itself.
func burned(t *testing.T, out string) map[int]time.Duration {
	t.Helper()
	m := map[int]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var pid int
		var u, k int64
		if _, err := fmt.Sscanf(sc.Text(), "burned %d %d %d", &pid, &u, &k); err == nil {
			m[pid] = time.Duration(u + k)
		}
	}
	return m
}

// A tree of 3 children burning 100 ms each and a parent burning 20 ms, run
// in its job: the totals are the tree's, the children are the 3, each
// cross-checked against the times the process read of itself and printed.
//
// On Windows the job's accounting and each child's handle answer, in
// clock ticks (15.625 ms): the totals within the processes' own sum and
// four ticks, each child within its own figure and two ticks. Under Wine
// the job's times are zero and GetProcessTimes of another process answers
// the caller's, so the figures are the last samples taken every 10 ms (a
// lower bound): each may miss one interval and the ticks around it, at
// most 40 ms a process, never more than the process used.
func TestRunTreeWindows(t *testing.T) {
	t.Setenv(cliHelperEnv, "tree") // CMD inherits it; the test binary is already past init
	stdout, stderr, status := runCLI(t, System{}, "run", "--json", "--", os.Args[0], "-test.run=^$")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var rec runJSON
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	own := burned(t, stdout)
	if len(own) != 4 || own[rec.PID] == 0 {
		t.Fatalf("want 4 processes' own figures, the parent %d's among them: %v\n%s", rec.PID, own, stdout)
	}
	var self time.Duration
	for _, d := range own {
		self += d
	}
	if rec.TotalUserNs == nil || rec.TotalKernelNs == nil {
		t.Fatalf("no totals: %s", stderr)
	}
	if rec.Recording == nil || rec.Recording.Error != "" {
		t.Fatalf("no record of the job's processes: %+v", rec.Recording)
	}
	total := time.Duration(*rec.TotalUserNs + *rec.TotalKernelNs)
	t.Logf("tree: total %v (%s), the processes' own %v; job processes %v, missed %v; note %q",
		total, rec.TotalPrecision, self, deref(rec.Recording.JobProcesses), deref(rec.Recording.MissedProcesses), rec.Recording.Note)

	const tick = 16 * time.Millisecond
	lowerBound := strings.HasPrefix(rec.TotalPrecision, "lower bound")
	if lowerBound != underWine {
		t.Errorf("precision %q under Wine=%v: the fallback is for Wine's stubbed accounting only", rec.TotalPrecision, underWine)
	}
	// What a process may lose from its figures: nothing on Windows (the
	// job and the handle charge the same ticks the process reads itself),
	// one sample interval and the ticks around it under Wine.
	var loss time.Duration
	if lowerBound {
		loss = jobtree.SampleInterval + 3*10*time.Millisecond
	}
	if total < self-4*loss-4*tick || total > self+4*tick {
		t.Errorf("tree total %v, the processes' own sum %v", total, self)
	}
	// 3 × 100 ms + 20 ms, and the start-up of four Go programs on top. No
	// fixed upper bound: that start-up is the processes' own, which the
	// check above holds the total to, and under Wine with other packages
	// side by side it can take far longer than the work.
	if total < 320*time.Millisecond-4*loss {
		t.Errorf("tree total %v, want at least %v (3 × 100 ms + 20 ms)", total, 320*time.Millisecond-4*loss)
	}

	if n := deref(rec.Recording.MissedProcesses); n != 0 {
		t.Errorf("%d processes missed: %v", n, rec.Recording.MissedPIDs)
	}
	exe := filepath.Base(os.Args[0])
	if len(rec.Children) != 3 {
		t.Fatalf("%d children, want 3: %s", len(rec.Children), stderr)
	}
	for _, c := range rec.Children {
		d := time.Duration(c.UserNs + c.KernelNs)
		o, ok := own[c.PID]
		switch {
		case !ok:
			t.Errorf("child %d is not one of the burners %v", c.PID, own)
		case d < o-loss-tick || d > o+2*tick:
			t.Errorf("child %d: %v, it read %v of itself", c.PID, d, o)
		case o < 100*time.Millisecond:
			t.Errorf("child %d read %v of itself, burned to 100ms", c.PID, o)
		}
		if c.PPID != rec.PID || c.ExitTime == nil || !strings.EqualFold(string(c.Name), exe) || len(c.Children) != 0 {
			t.Errorf("child %+v: want parent %d, an exit time, the name %s", c, rec.PID, exe)
		}
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
