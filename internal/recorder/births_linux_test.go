package recorder

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkRecordBirths records task births as fast as the machine makes
// them, as root would (system-wide events, taskstats) and as anyone else
// (perf-only: inherited counters), and reports the rate: threads (8 at a time, each exiting at once)
// and processes (a shell running /bin/true). births/s is the rate the
// recording kept up with; incomplete counts the recordings that were not
// complete (each prints why), which must stay 0 for the rate to count.
//
//	go test -run '^$' -bench RecordBirths -benchtime 5x ./internal/recorder
func BenchmarkRecordBirths(b *testing.B) {
	for _, mode := range []string{"default", "perf-only"} {
		b.Run(mode, func(b *testing.B) {
			var test *testHooks
			if mode == "perf-only" { // as without root: inherited counters, no taskstats
				test = &testHooks{perfOnly: true}
			}
			benchmarkBirths(b, test)
		})
	}
}

func benchmarkBirths(b *testing.B, test *testHooks) {
	for _, c := range []struct {
		name   string
		births int
		cmd    func() *exec.Cmd
	}{
		{"threads", 10000, func() *exec.Cmd { return helper("threads:10000:0:8") }},
		{"processes", 2000, func() *exec.Cmd {
			return exec.Command("sh", "-c", "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done")
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var wall time.Duration
			incomplete, tasks := 0, 0
			for range b.N {
				cmd := c.cmd()
				start := time.Now()
				r, err := Start(cmd, Options{test: test})
				if errors.Is(err, ErrNotSupported) {
					b.Skipf("recording not possible here: %v", err)
				}
				if err != nil {
					b.Fatal(err)
				}
				exitedNotReaped(b, cmd.Process.Pid)
				wall += time.Since(start)
				rec, st, err := r.Stop()
				cmd.Wait()
				if err != nil {
					b.Fatal(err)
				}
				if st.LostRecords > 0 || st.Incomplete > 0 || st.ExitUnseen > 0 || st.UnknownCreation > 0 || st.ExitOnly > 0 {
					incomplete++
					b.Logf("stats %+v", st)
				}
				for _, p := range rec.Processes {
					tasks += len(p.Threads)
				}
			}
			b.ReportMetric(float64(c.births*b.N)/wall.Seconds(), "births/s")
			b.ReportMetric(float64(tasks)/float64(b.N), "tasks/op")
			b.ReportMetric(float64(incomplete), "incomplete")
		})
	}
}
