package goroutines

import (
	"math"
	"os"
	"runtime"
	"testing"
	"time"
)

// A goroutine whose CPU goes to system calls (reading /dev/zero: the kernel
// clears the buffer) holds its thread through them: its CPU is its thread
// CPU clock's growth, kernel time included.
func TestSyscallTimeCounts(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var id uint64
	var truth int64
	rec, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		id = goid()
		c0 := ownThreadCPU()
		for ownThreadCPU()-c0 < int64(80*time.Millisecond) {
			if _, err := f.Read(buf); err != nil {
				t.Error(err)
				return
			}
		}
		truth = ownThreadCPU() - c0
	}()
	<-done
	p, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	g, ok := byID(p, id)
	if !ok {
		t.Fatalf("goroutine %d not in the profile", id)
	}
	t.Logf("goroutine %d: %v, its thread clock %v", id, g.CPU, time.Duration(truth))
	tol := 0.03
	if !p.Exact {
		tol = 0.15
	}
	if math.Abs(float64(int64(g.CPU)-truth)) > tol*float64(truth)+3e6 {
		t.Errorf("CPU %v, its thread CPU clock grew %v", g.CPU, time.Duration(truth))
	}
}
