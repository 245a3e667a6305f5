package otlp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/internal/testutil/workload"
)

// userHZ is the unit of /proc's start times: 100 on every Linux Go runs on.
const userHZ = 100

// startTicks reads a task's start time (stat field 22, USER_HZ ticks since
// boot) from path.
func startTicks(t *testing.T, path string) uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ticks, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ticks
}

// bootOffset reads CLOCK_REALTIME − CLOCK_BOOTTIME, the narrowest of a few
// bracketed readings.
func bootOffset() (offset, boot int64) {
	width := int64(math.MaxInt64)
	for range 20 {
		var b1, w, b2 unix.Timespec
		unix.ClockGettime(unix.CLOCK_BOOTTIME, &b1)
		unix.ClockGettime(unix.CLOCK_REALTIME, &w)
		unix.ClockGettime(unix.CLOCK_BOOTTIME, &b2)
		if d := b2.Nano() - b1.Nano(); d < width {
			width, boot = d, b1.Nano()+d/2
			offset = w.Nano() - boot
		}
	}
	return offset, boot
}

// A process whose threads started ticks after it did: every point of it
// in every push, its threads' included, carries the process's creation
// time (its /proc/PID/stat start time, dated with CLOCK_REALTIME −
// CLOCK_BOOTTIME read here), and the process and each thread have one
// series per mode, a thread's all with its thread.id.
func TestPushCarriesOneCreationPerProcess(t *testing.T) {
	child := workload.Command("tids 0")
	stdin, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); child.Process.Kill(); child.Wait() })
	pid := child.Process.Pid
	lines := bufio.NewReader(out)
	start := startTicks(t, fmt.Sprintf("/proc/%d/stat", pid))
	// Wait for the clock to pass the process's start tick, then take new
	// threads (the runtime may hand over one it made at the start) until
	// one started in a later tick than the process.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, boot := bootOffset(); boot >= int64(start+2)*1e9/userHZ {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CLOCK_BOOTTIME did not pass the process's start time in 10 s")
		}
	}
	later := 0
	for range 20 {
		io.WriteString(stdin, "new\n")
		var tid int
		line, _ := lines.ReadString('\n')
		if _, err := fmt.Sscanf(line, "tid %d", &tid); err != nil {
			t.Fatalf("workload: %q", line)
		}
		if startTicks(t, fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)) > start {
			later = tid
			break
		}
	}
	if later == 0 {
		t.Fatal("20 new threads of the workload, none started after its process's tick")
	}
	offset, _ := bootOffset()
	want := time.Unix(0, offset+int64(start)*1e9/userHZ)

	c, err := exporter.New(exporter.Options{PIDs: []int{pid}, Threads: true, SampleInterval: -1, NoExitRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	if err := register(mp.Meter("test"), c); err != nil {
		t.Fatal(err)
	}
	for push := range 20 {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		tasksAfter, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		series := map[string]int{} // thread.id ("" for the process): series of process.cpu.time
		check := func(metric string, set attribute.Set) {
			if v, _ := set.Value("process.pid"); v.AsInt64() != int64(pid) {
				return
			}
			v, _ := set.Value("process.creation.time")
			got, err := time.Parse(time.RFC3339Nano, v.AsString())
			if d := got.Sub(want); err != nil || d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("push %d: %s %v: process.creation.time %q, the kernel's start time of process %d is %s",
					push, metric, set.Encoded(attribute.DefaultEncoder()), v.AsString(), pid, want.UTC().Format(time.RFC3339Nano))
			}
			if metric == "process.cpu.time" {
				tid, _ := set.Value("thread.id")
				series[tid.Emit()]++
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[float64]:
					for _, p := range d.DataPoints {
						check(m.Name, p.Attributes)
					}
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						check(m.Name, p.Attributes)
					}
				}
			}
		}
		if series[""] != 2 {
			t.Errorf("push %d: %d series of process.cpu.time without thread.id for process %d, want user and system", push, series[""], pid)
		}
		if series[strconv.Itoa(later)] != 2 {
			t.Errorf("push %d: %d series of process.cpu.time for thread %d, want user and system", push, series[strconv.Itoa(later)], later)
		}
		if n := len(series) - 1; len(tasks) == len(tasksAfter) && n != len(tasks) {
			t.Errorf("push %d: series of %d threads, /proc/%d/task lists %d", push, n, pid, len(tasks))
		}
		for tid, n := range series {
			if n != 2 {
				t.Errorf("push %d: %d series of process.cpu.time for thread %q, want user and system", push, n, tid)
			}
		}
	}
}
