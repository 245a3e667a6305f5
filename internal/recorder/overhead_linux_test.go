package recorder

import (
	"errors"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// The overhead at 1,000 thread creations per second: a workload that
// creates 500 threads one after another, each burning 1 ms of its own CPU
// clock (about 0.5 s, about 1,000 creations/s), run plainly and recorded,
// alternately; the fastest run of each kind (the one least disturbed by
// the other work on the machine) is compared. Target: at most 5% slower.
// With strace installed, the same workload under strace -f stopping at
// clones and exits (what a ptrace recorder would do) is measured beside
// it, for the record.
func TestOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for a few seconds")
	}
	const job = "threads:500:1:1"
	run := func(recorded bool) time.Duration {
		cmd := helper(job)
		start := time.Now()
		if !recorded {
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		r, err := Start(cmd)
		if errors.Is(err, ErrNotSupported) {
			t.Skipf("recording not possible here: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		exitedNotReaped(t, cmd.Process.Pid)
		d := time.Since(start)
		rec, st, err := r.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.Processes[0].Threads); n < 500 || st.LostRecords != 0 {
			t.Errorf("%d threads recorded, %d records lost", n, st.LostRecords)
		}
		return d
	}
	var plain, recorded []time.Duration
	for range 3 {
		plain = append(plain, run(false))
		recorded = append(recorded, run(true))
	}
	ratio := float64(slices.Min(recorded)) / float64(slices.Min(plain))
	t.Logf("500 threads, 1 ms each: plain %v, recorded %v: %.3fx (fastest of 3 each; medians %v, %v)",
		slices.Min(plain), slices.Min(recorded), ratio, median(plain), median(recorded))
	if ratio > 1.05 {
		t.Errorf("recording slows the workload %.1f%%, target 5%%", (ratio-1)*100)
	}
	if _, err := exec.LookPath("strace"); err == nil {
		var traced []time.Duration
		for range 1 {
			cmd := exec.Command("strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=exit", "-o", "/dev/null", cmd0(), "-test.run=^$")
			cmd.Env = helper(job).Env
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("strace: %v: %s", err, out)
				return
			}
			traced = append(traced, time.Since(start))
		}
		t.Logf("under strace -f --seccomp-bpf -e trace=exit (ptrace stops at each clone and exit): %v, %.3fx",
			slices.Min(traced), float64(slices.Min(traced))/float64(slices.Min(plain)))
	}
}

func cmd0() string { return helper("").Path }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
