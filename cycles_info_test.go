package cputime_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/cputime/cputime"
)

// ProcessInfo.Cycles is the system's own count where the enumeration has
// it (Windows: the snapshot's CycleTime), bracketed by QueryProcessCycleTime
// read before and after; on Linux it is documented as 0.
func TestProcessInfoCycles(t *testing.T) {
	pid := os.Getpid()
	if runtime.GOOS == "linux" {
		// Derived from the exact total as ProcessCycleTime derives it: it
		// lies between two ProcessCycleTime reads around the enumeration.
		if _, err := cputime.ReferenceFrequency(); err != nil {
			t.Skipf("no reference frequency, so no cycles: %v", err)
		}
		before, err := cputime.ProcessCycleTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		info, err := cputime.ProcessInfoOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		after, err := cputime.ProcessCycleTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		if info.Cycles < before || info.Cycles > after {
			t.Errorf("ProcessInfo.Cycles %d outside [%d, %d], the ProcessCycleTime reads around it", info.Cycles, before, after)
		}
		return
	}
	if runtime.GOOS != "windows" {
		return // no enumeration elsewhere
	}
	before, err := cputime.ProcessCycleTime(pid)
	if err != nil {
		t.Skipf("QueryProcessCycleTime, the witness, fails here (Wine 8 stubs it): %v", err)
	}
	info, err := cputime.ProcessInfoOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	after, err := cputime.ProcessCycleTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot may not count the running thread's current quantum,
	// which QueryProcessCycleTime may: a generous lower bound.
	if info.Cycles < before/2 || info.Cycles > after {
		t.Errorf("snapshot CycleTime %d outside [%d/2, %d] of QueryProcessCycleTime", info.Cycles, before, after)
	}
	for p, err := range cputime.Processes() {
		if err == nil && p.ID == pid && p.Cycles < before/2 {
			t.Errorf("Processes: Cycles %d below %d/2", p.Cycles, before)
		}
	}
}
