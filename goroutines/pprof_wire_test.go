package goroutines

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every field WritePprof writes, read back by go tool pprof (google/pprof's
// parser, not this package): a profile built by hand, with a goroutine in
// and out of a task, one whose start function is unknown, the runtime's
// share, the fallback's comment and a problem.
func TestPprofFieldsReadByGoToolPprof(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run go tool pprof")
	}
	start := time.Unix(1700000000, 123456789)
	p := &Profile{
		Start:    start,
		End:      start.Add(2 * time.Second),
		Runtime:  5 * time.Millisecond,
		Problems: []string{"a problem, 3 times"},
		pairs:    map[pairKey]int64{{7, 0}: 30e6, {7, 3}: 10e6, {9, 0}: 2e6},
		fn:       map[uint64]string{7: "main.worker"},
		taskType: map[uint64]string{3: "unit"},
	}
	file := filepath.Join(t.TempDir(), "goroutines.pb.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WritePprof(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(gobin, "tool", "pprof", "-raw", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -raw: %v\n%s", err, out)
	}
	// In this order, each a whole line once spaces are trimmed.
	want := []string{
		"Comment: fallback: thread CPU clocks shared by running time (not exact)",
		"Comment: a problem, 3 times",
		"PeriodType: cpu nanoseconds",
		"Period: 1",
		"Time: " + time.Unix(0, start.UnixNano()).String(),
		"Duration: 2s",
		"Samples:",
		"cpu/nanoseconds",
		"30000000: 1",
		"function:[main.worker]",
		"goroutine:[7]",
		"10000000: 1",
		"function:[main.worker] task:[unit]",
		"goroutine:[7] task_id:[3]",
		"2000000: 2",
		"function:[" + unknownFunction + "]",
		"goroutine:[9]",
		"5000000: 3",
		"Locations",
		"1: 0x0 M=1 main.worker :0:0 s=0",
		"2: 0x0 M=1 " + unknownFunction + " :0:0 s=0",
		"3: 0x0 M=1 " + runtimeFrame + " :0:0 s=0",
	}
	lines := strings.Split(string(out), "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && strings.TrimSpace(l) == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("go tool pprof -raw lacks %q (after the %d lines before it):\n%s", want[i], i, out)
	}

	out, err = exec.Command(gobin, "tool", "pprof", "-traces", file).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -traces: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Total samples = 47ms") {
		t.Errorf("go tool pprof -traces does not total 47ms (30+10+2 goroutines, 5 runtime):\n%s", out)
	}
}
