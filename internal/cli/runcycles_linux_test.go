package cli

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/cputime/cputime"
)

// The cycles of run's record are its final total's, at the reference
// frequency: for a one-thread CMD, the process's cycles and its thread's
// agree, and both are its final CPU time × the frequency (not, as once, the
// cycles of the times read when CMD had just started).
func TestRunRecordCycles(t *testing.T) {
	f, err := cputime.ReferenceFrequency()
	if err != nil {
		t.Skipf("no reference frequency: %v", err)
	}
	_, stderr, status := runCLI(t, System{}, "run", "--json", "--", "sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done")
	if status != 0 {
		t.Fatalf("status %d; stderr %s", status, stderr)
	}
	var rec jsonProcess
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil {
		t.Fatalf("record on stderr: %v\n%s", err, stderr)
	}
	if rec.Cycles == nil || len(rec.Threads) != 1 || rec.Threads[0].Cycles == nil {
		t.Fatalf("no cycles in the record: %s", stderr)
	}
	want := float64(rec.UserNs+rec.KernelNs) * float64(f.Hz) / 1e9
	for name, got := range map[string]uint64{"process": *rec.Cycles, "thread": *rec.Threads[0].Cycles} {
		if math.Abs(float64(got)-want) > 2 {
			t.Errorf("%s cycles %d; its CPU time × %d Hz is %.0f", name, got, f.Hz, want)
		}
	}
}
