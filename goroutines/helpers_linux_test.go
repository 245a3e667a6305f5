package goroutines

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/trace"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/testutil/seccomp"
)

// TestMain doubles as the busy-loop process the load tests start.
func TestMain(m *testing.M) {
	if os.Getenv("GOROUTINES_TEST_HOG") == "1" {
		runtime.GOMAXPROCS(1)
		for {
		}
	}
	if os.Getenv(perfRefusedEnv) == "1" {
		if err := seccomp.Deny(unix.SYS_PERF_EVENT_OPEN, unix.EACCES); err != nil {
			fmt.Println("--- SKIP: cannot refuse perf_event_open:", err)
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// loadMachine keeps two busy processes per CPU running until the test ends,
// so the OS preempts our threads and a goroutine's running wall time is not
// its CPU time.
func loadMachine(t testing.TB) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*runtime.NumCPU(); i++ {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "GOROUTINES_TEST_HOG=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
}

func clockNs(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

func ownThreadCPU() int64 { return clockNs(unix.CLOCK_THREAD_CPUTIME_ID) }
func processCPU() int64   { return clockNs(unix.CLOCK_PROCESS_CPUTIME_ID) }

// itersFor: spin iterations for d of CPU, the fastest of 3 tries on a
// locked thread.
func itersFor(d time.Duration) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := 1e18
	for i := 0; i < 3; i++ {
		c0 := ownThreadCPU()
		sink.Add(spin(1_000_000, uint64(i+1)))
		best = min(best, float64(ownThreadCPU()-c0)/1e6)
	}
	return int(float64(d) / best)
}

// workload is what the tests record: a goroutine that locks its thread and
// burns burn of its own thread CPU clock (truth), and three goroutines in
// tasks unit-1, unit-2, unit-4 doing 1, 2 and 4 units of spin.
type workload struct {
	lockedID    uint64
	lockedTID   int64
	lockedTruth int64
	workIDs     map[string]uint64
}

func lockedBurner(burn time.Duration, iters int, w *workload, exitThread bool) {
	runtime.LockOSThread()
	if !exitThread {
		defer runtime.UnlockOSThread()
	} // else: the goroutine ends locked, and the runtime ends its thread
	w.lockedID = goid()
	w.lockedTID = int64(unix.Gettid())
	c0 := ownThreadCPU()
	x, c1 := uint64(88172645463325252), c0
	for c1-c0 < int64(burn) {
		x = spin(iters/500, x)
		c1 = ownThreadCPU()
	}
	sink.Add(x)
	w.lockedTruth = c1 - c0
}

func unitWorker(units, unitIters int, name string, w *workload, mu *sync.Mutex) {
	_, task := trace.NewTask(context.Background(), name)
	mu.Lock()
	w.workIDs[name] = goid()
	mu.Unlock()
	x := uint64(2463534242)
	for u := 0; u < units; u++ {
		if u > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		x = spin(unitIters, x)
	}
	task.End()
	mu.Lock()
	sink.Add(x)
	mu.Unlock()
}

func runWorkload(burn, unit time.Duration, exitThread bool) *workload {
	iters := itersFor(unit)
	w := &workload{workIDs: map[string]uint64{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(4)
	go func() { defer wg.Done(); lockedBurner(burn, iters, w, exitThread) }()
	for _, u := range []int{1, 2, 4} {
		go func() { defer wg.Done(); unitWorker(u, iters, "unit-"+strconv.Itoa(u), w, &mu) }()
	}
	wg.Wait()
	return w
}

func tasksByType(p *Profile) map[string][]Task {
	m := map[string][]Task{}
	for _, k := range p.Tasks {
		m[k.Type] = append(m[k.Type], k)
	}
	return m
}

func ms(d int64) float64 { return float64(d) / 1e6 }
