package otlp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/internal/testutil/otelcol"
	"github.com/cputime/cputime/internal/testutil/workload"
)

func TestMain(m *testing.M) {
	workload.Main()
	os.Exit(m.Run())
}

func schedstat(t *testing.T, pid int) float64 {
	t.Helper()
	var sum float64
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, e.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		ns, _ := strconv.ParseFloat(f[0], 64)
		sum += ns / 1e9
	}
	// The live threads' schedstat leaves out the threads that exited,
	// which the process's total holds (a race-enabled child's threads
	// can exit between the pushes). The process's stat ticks hold them,
	// rounded down to a tick: the larger of the two is still at most the
	// total.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]); len(f) > 12 {
			u, _ := strconv.ParseFloat(f[14-3], 64)
			k, _ := strconv.ParseFloat(f[15-3], 64)
			sum = max(sum, (u+k)/100) // USER_HZ: 100 on every Linux Go runs on
		}
	}
	return sum
}

// A real OpenTelemetry Collector receives the pushes, over OTLP/HTTP and
// over gRPC, and its debug exporter shows process.cpu.time of a spinning
// child with the semantic conventions' attributes (one
// process.creation.time on all of them), its values between the child's
// schedstat read before the pushes and after them, and host.name as a
// resource attribute.
func TestCollectorEndToEnd(t *testing.T) {
	col := otelcol.Start(t)
	child := workload.Command("spin 0")
	stdin, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); child.Process.Kill(); child.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	var spinner int
	fmt.Sscanf(line, "ready %d", &spinner)
	pid := child.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	for _, tc := range []struct {
		proto string
		port  int
	}{{"http/protobuf", col.HTTPPort}, {"grpc", col.GRPCPort}} {
		t.Run(strings.ReplaceAll(tc.proto, "/", "-"), func(t *testing.T) {
			c, err := exporter.New(exporter.Options{PIDs: []int{pid}, Threads: true, SampleInterval: -1, NoExitRecords: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := schedstat(t, pid)
			started := time.Now()
			mark := len(col.Output())
			p, err := New(context.Background(), c, Options{Endpoint: "http://127.0.0.1:" + strconv.Itoa(tc.port), Protocol: tc.proto,
				Interval: 200 * time.Millisecond, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			pids := func(ps []otelcol.Point) (got []otelcol.Point) {
				for _, x := range ps {
					// The previous subtest's last push can reach the log after
					// mark; its figures predate before.
					if x.Metric == "process.cpu.time" && x.Attrs["process.pid"] == strconv.Itoa(pid) && !x.At.Before(started) {
						got = append(got, x)
					}
				}
				return got
			}
			ps, _ := col.Await(30*time.Second, mark, func(ps []otelcol.Point) bool { return len(pids(ps)) >= 4 })
			got := pids(ps)
			shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(shut); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			after := schedstat(t, pid)
			if len(got) < 4 {
				t.Fatalf("the collector shows %d process.cpu.time points of process %d after 30 s", len(got), pid)
			}
			var proc, thread map[string]float64 = map[string]float64{}, map[string]float64{}
			creations := map[string]bool{}
			for _, x := range got {
				creations[x.Attrs["process.creation.time"]] = true
				if x.Resource["host.name"] != host || x.Resource["service.name"] != "cputime" {
					t.Errorf("resource %v, want host.name %q and service.name cputime", x.Resource, host)
				}
				if x.Attrs["process.executable.name"] != filepath.Base(exe) || x.Attrs["process.parent_pid"] != strconv.Itoa(os.Getpid()) {
					t.Errorf("attributes %v: want process.executable.name %q, process.parent_pid %d", x.Attrs, filepath.Base(exe), os.Getpid())
				}
				if _, err := time.Parse(time.RFC3339Nano, x.Attrs["process.creation.time"]); err != nil {
					t.Errorf("process.creation.time %q: %v", x.Attrs["process.creation.time"], err)
				}
				mode := x.Attrs["cpu.mode"]
				if mode != "user" && mode != "system" {
					t.Errorf("cpu.mode %q", mode)
				}
				if tid, ok := x.Attrs["thread.id"]; ok {
					if tid == strconv.Itoa(spinner) {
						thread[mode] = x.Value // the last push's
					}
				} else {
					proc[mode] = x.Value
				}
			}
			if len(creations) != 1 {
				t.Errorf("process %d's points carry %d values of process.creation.time: %v", pid, len(creations), creations)
			}
			if v := proc["user"] + proc["system"]; v < before-0.01 || v > after+0.01 {
				t.Errorf("process.cpu.time of process %d: %.4f s in the last push, schedstat %.4f s before the pushes and %.4f s after", pid, v, before, after)
			}
			if v := thread["user"] + thread["system"]; v <= 0 || v > after+0.01 {
				t.Errorf("process.cpu.time of the spinning thread %d: %.4f s, its process's schedstat %.4f s", spinner, v, after)
			}
		})
	}
}
