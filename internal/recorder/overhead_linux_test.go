package recorder

import (
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkRecordOverhead measures what a recording costs the work it
// records, side by side with perf stat counting the same work (the peer:
// `perf stat -e task-clock`): a workload that creates 500
// threads one after another, each burning 1 ms of its own CPU clock
// (about 1,000 creations/s), and a shell running /bin/true 300 times,
// each run plainly, under perf stat (where installed) and recorded, in
// turn, b.N times. It reports the medians' ratios to the plain runs (wall
// and the workload's own CPU) and the recorder's own CPU per run:
//
//	go test -run '^$' -bench RecordOverhead -benchtime 7x ./internal/recorder
//
// A measurement, not a test: on a shared machine one kind of run can be
// slowed by other work, which is why the runs alternate and the medians
// are compared.
func BenchmarkRecordOverhead(b *testing.B) {
	perf, _ := exec.LookPath("perf")
	for _, w := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"threads", func() *exec.Cmd { return helper("threads:500:1:1") }},
		{"true", func() *exec.Cmd {
			return exec.Command("sh", "-c", "i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done")
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			type result struct{ wall, cpu, self time.Duration }
			var plain, stat, recorded []result
			for range b.N {
				cmd := w.cmd()
				start := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				plain = append(plain, result{time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), 0})
				if perf != "" {
					c := w.cmd()
					cmd := exec.Command(perf, append([]string{"stat", "-e", "task-clock", "-o", "/dev/null", "--"}, c.Args...)...)
					cmd.Path, cmd.Env = perf, c.Env
					start := time.Now()
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
					stat = append(stat, result{time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), 0})
				}
				cmd = w.cmd()
				self0 := selfCPU()
				start = time.Now()
				r, err := Start(cmd)
				if errors.Is(err, ErrNotSupported) {
					b.Skipf("recording not possible here: %v", err)
				}
				if err != nil {
					b.Fatal(err)
				}
				exitedNotReaped(b, cmd.Process.Pid)
				d := time.Since(start)
				if _, _, err := r.Stop(); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				recorded = append(recorded, result{d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), selfCPU() - self0})
			}
			med := func(rs []result, f func(result) time.Duration) float64 {
				v := make([]time.Duration, len(rs))
				for i, r := range rs {
					v[i] = f(r)
				}
				slices.Sort(v)
				return float64(v[len(v)/2])
			}
			wall := func(r result) time.Duration { return r.wall }
			cpu := func(r result) time.Duration { return r.cpu }
			b.ReportMetric(med(recorded, wall)/med(plain, wall), "wall-x")
			b.ReportMetric(med(recorded, cpu)/med(plain, cpu), "cpu-x")
			b.ReportMetric(med(recorded, func(r result) time.Duration { return r.self })/1e6, "recorder-ms/op")
			if len(stat) > 0 {
				b.ReportMetric(med(stat, wall)/med(plain, wall), "perfstat-wall-x")
				b.ReportMetric(med(stat, cpu)/med(plain, cpu), "perfstat-cpu-x")
			}
		})
	}
}

// BenchmarkStrace is the same threads workload under strace -f stopping at
// each clone and exit, as a ptrace recorder must: why perf and not ptrace.
func BenchmarkStrace(b *testing.B) {
	if _, err := exec.LookPath("strace"); err != nil {
		b.Skip("strace not installed")
	}
	for range b.N {
		cmd := exec.Command("strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=exit", "-o", "/dev/null", cmd0(), "-test.run=^$")
		cmd.Env = helper("threads:500:1:1").Env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("strace: %v: %s", err, out)
		}
	}
}

func cmd0() string { return helper("").Path }

// selfCPU is this process's CPU time (the recorder's reading goroutine
// during a recorded run, and the test's own small share).
func selfCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
