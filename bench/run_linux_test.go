//go:build linux

package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// runUser (-runuser NAME, as root) runs every variant of BenchmarkRun as
// that user, through setpriv: cputime run then records as an unprivileged
// user's does, with perf counters the tree's tasks inherit and no
// taskstats.
var runUser = flag.String("runuser", "", "run BenchmarkRun's variants as this user (root, setpriv)")

// BenchmarkRun measures the cputime command's run as its user meets it:
// the wall time from starting `cputime run` to its exit, the record
// written, against the same work run bare and under
// `perf stat -e task-clock` (the peer the overhead is held to). Two works:
// a shell loop running /bin/true 2,000 times, and 5,000 threads of 100 µs
// of their own CPU, 4 at a time (a C program, built with gcc). Each round
// runs every variant once, the order rotated from round to round; the
// metrics are the medians' ratios to the bare runs:
//
//	go test -run '^$' -bench Run -benchtime 7x ./bench
//	go test -run '^$' -bench Run -benchtime 7x ./bench -args -runuser nobody
//
// perfstat-x, run-x (cputime run), tree-x (cputime run --tree --json -o F),
// and, where taskstats gives exit records (root), floor-x: the work run
// by ./cmd/exitfloor, registered for the exit records that run's exact
// final times come from and reading none of them while the work runs,
// what the kernel's records alone cost the work, a floor under run-x
// for as long as run takes its final times from them. Each variant's
// NAME-cpu-x is the same for CPU time: the median of the user and
// system time wait4 gives for the variant's process (the work, the
// wrapper, and cputime's or perf's own reading), over the bare work's
// (bare-cpu-ms, its median).
// For the --tree runs two figures of cputime's own cost (medians):
// tree-own-ms, its own CPU (wait4's rusage of cputime, which holds CMD's
// tree, less the tree's wait4 total that the record gives), and
// tree-tail-ms, the wall time the user waits after CMD exits (cputime's
// exit, seen here as its wait4 returns, less CMD's exit time in the
// record, a kernel timestamp). A measurement, not a test: the ratios
// move with the machine's other work (on a 2-vCPU VM whose host steals,
// by several hundredths from one series to the next, and by tenths
// while the host is busy), which is why the variants alternate.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	ct := filepath.Join(dir, "cputime")
	if out, err := exec.Command("go", "build", "-o", ct, "github.com/cputime/cputime/cmd/cputime").CombinedOutput(); err != nil {
		b.Fatalf("building cputime: %v\n%s", err, out)
	}
	as, err := asUser(dir)
	if err != nil {
		b.Fatal(err)
	}
	// -short (CI runs every benchmark once so): a tenth of the work.
	loops, threads := "2000", "5000"
	if testing.Short() {
		loops, threads = "200", "500"
	}
	works := []struct {
		name string
		cmd  []string
	}{
		{"true", []string{"sh", "-c", "i=0; while [ $i -lt " + loops + " ]; do /bin/true; i=$((i+1)); done"}},
	}
	if bin, err := buildShortThreads(dir); err == nil {
		works = append(works, struct {
			name string
			cmd  []string
		}{"threads", []string{bin, threads, "4", "100"}})
	} else {
		b.Logf("no threads work: %v", err)
	}
	variants := []struct {
		name string
		pre  []string
	}{
		{"bare", as},
		{"run", append(slices.Clip(as), ct, "run", "--")},
	}
	record := filepath.Join(dir, "record.json")
	tree := append(slices.Clip(as), ct, "run", "--tree", "--json", "-o", record, "--")
	if out, err := exec.Command(tree[0], append(tree[1:], "true")...).CombinedOutput(); err == nil {
		variants = append(variants, struct {
			name string
			pre  []string
		}{"tree", tree})
	} else {
		b.Logf("run --tree cannot record here (%v: %.200s): no tree-x", err, out)
	}
	floor := filepath.Join(dir, "exitfloor")
	if out, err := exec.Command("go", "build", "-o", floor, "github.com/cputime/cputime/bench/cmd/exitfloor").CombinedOutput(); err != nil {
		b.Fatalf("building exitfloor: %v\n%s", err, out)
	}
	if out, err := exec.Command(floor, "--", "true").CombinedOutput(); err == nil {
		variants = append(variants, struct {
			name string
			pre  []string
		}{"floor", append(slices.Clip(as), floor, "--")})
	} else {
		b.Logf("no taskstats exit records here (%.200s): no floor-x", out)
	}
	if perf, err := exec.LookPath("perf"); err == nil && exec.Command(perf, "stat", "-e", "task-clock", "-o", "/dev/null", "--", "true").Run() == nil {
		variants = append(variants, struct {
			name string
			pre  []string
		}{"perfstat", append(slices.Clip(as), perf, "stat", "-e", "task-clock", "-o", "/dev/null", "--")})
	} else {
		b.Log("perf stat not usable here: no peer in the comparison")
	}
	for _, w := range works {
		b.Run(w.name, func(b *testing.B) {
			walls := make([][]time.Duration, len(variants))
			cpus := make([][]time.Duration, len(variants))
			var own, tail []time.Duration
			round := 0
			for range b.N {
				for k := range variants {
					i := (k + round) % len(variants)
					args := append(slices.Clip(variants[i].pre), w.cmd...)
					cmd := exec.Command(args[0], args[1:]...)
					start := time.Now()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%s under %s: %v\n%.500s", w.name, variants[i].name, err, out)
					}
					end := time.Now()
					walls[i] = append(walls[i], end.Sub(start))
					cpus[i] = append(cpus[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
					if variants[i].name == "tree" {
						o, t, source, err := treeCost(record, cmd.ProcessState, end)
						if err != nil {
							b.Fatalf("%s under %s: %v", w.name, variants[i].name, err)
						}
						if len(own) == 0 {
							b.Logf("%s: the record's final times from %s", w.name, source)
						}
						own, tail = append(own, o), append(tail, t)
					}
				}
				round++
			}
			med := func(v []time.Duration) float64 {
				v = slices.Clone(v)
				slices.Sort(v)
				return float64(v[len(v)/2])
			}
			bare, bareCPU := med(walls[0]), med(cpus[0])
			b.ReportMetric(bare/1e6, "bare-ms")
			b.ReportMetric(bareCPU/1e6, "bare-cpu-ms")
			for i, v := range variants[1:] {
				b.ReportMetric(med(walls[i+1])/bare, v.name+"-x")
				b.ReportMetric(med(cpus[i+1])/bareCPU, v.name+"-cpu-x")
			}
			if len(own) > 0 {
				b.ReportMetric(med(own)/1e6, "tree-own-ms")
				b.ReportMetric(med(tail)/1e6, "tree-tail-ms")
			}
		})
	}
}

// asUser returns the command prefix that runs a variant as runUser (none
// without -runuser), and opens dir, where the programs and the record
// are, to that user.
func asUser(dir string) ([]string, error) {
	if *runUser == "" {
		return nil, nil
	}
	u, err := user.Lookup(*runUser)
	if err != nil {
		return nil, fmt.Errorf("-runuser: %w", err)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, fmt.Errorf("-runuser needs setpriv (util-linux): %w", err)
	}
	// The test's own temporary folder (dir's parent) is the runner's alone.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, err
	}
	return []string{setpriv, "--reuid=" + u.Uid, "--regid=" + u.Gid, "--clear-groups"}, nil
}

// treeCost reads, from a record of cputime run --json and the state of
// the cputime process that wrote it (exited at end), cputime's own CPU time
// and the time from CMD's exit to cputime's, and where the record's final
// times came from (taskstats, or perf without root).
func treeCost(record string, ps *os.ProcessState, end time.Time) (own, tail time.Duration, source string, err error) {
	b, err := os.ReadFile(record)
	if err != nil {
		return 0, 0, "", err
	}
	var r struct {
		ExitTime    time.Time `json:"exit_time"`
		TotalUser   int64     `json:"total_user_ns"`
		TotalKernel int64     `json:"total_kernel_ns"`
		Recording   struct {
			Source string `json:"source"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, 0, "", fmt.Errorf("the record: %w", err)
	}
	if r.ExitTime.IsZero() || r.TotalUser+r.TotalKernel == 0 {
		return 0, 0, "", fmt.Errorf("the record has no exit time or tree total: %.300s", b)
	}
	own = ps.UserTime() + ps.SystemTime() - time.Duration(r.TotalUser+r.TotalKernel)
	return own, end.Sub(r.ExitTime), r.Recording.Source, nil
}

// shortThreadsC creates N threads, PAR at a time, each burning US
// microseconds of its own CPU clock before it exits.
const shortThreadsC = `#include <pthread.h>
#include <stdlib.h>
#include <time.h>
static long us;
static long long tcpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static void *run(void *p) { volatile unsigned long x = 0; while (tcpu() < us * 1000LL) for (int i = 0; i < 2000; i++) x += i; return p; }
int main(int argc, char **argv) {
	int n = atoi(argv[1]), par = atoi(argv[2]); us = atol(argv[3]);
	pthread_t t[64];
	if (par > 64) par = 64;
	for (int i = 0; i < n; i += par) {
		int k = 0;
		for (; k < par && i + k < n; k++) pthread_create(&t[k], NULL, run, NULL);
		while (k-- > 0) pthread_join(t[k], NULL);
	}
	return 0;
}
`

func buildShortThreads(dir string) (string, error) {
	src, bin := filepath.Join(dir, "shortthreads.c"), filepath.Join(dir, "shortthreads")
	if err := os.WriteFile(src, []byte(shortThreadsC), 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("gcc", "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		return "", &buildError{err, string(out)}
	}
	return bin, nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "gcc: " + e.err.Error() + ": " + e.out }
