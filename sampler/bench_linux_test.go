package sampler_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/testutil/workload"
	"github.com/cputime/cputime/sampler"
)

// The benchmarks of a refresh, each beside its floor, in one run:
//
//	go test -run '^$' -bench . -benchmem ./sampler/
//
// BenchmarkRefresh/1000 refreshes a process of 1,000 idle threads (other
// than ours): none has run since the last refresh, so the process's clock
// says so and no thread is read. BenchmarkRefresh/1000+busy is the same
// with one more thread always running and entering the scheduler (so its
// run time is always up to date), as in most real processes refreshed a
// second apart: each refresh reads every thread's schedstat (and the busy
// one's stat).
// BenchmarkRawPread/1000 and /1000+busy are the floor, 1,000 preads of
// kept-open schedstat files of the same threads;
// BenchmarkRescan/1000 the root package's scan, cputime.Threads, which
// opens and reads two files per thread. Each reports ns per thread.

func idleChild(b *testing.B, n int) *child {
	c := startChildB(b, fmt.Sprintf("idle %d", n))
	return c
}

func startChildB(b *testing.B, mode string) *child {
	cmd := workload.Command(mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	buf := make([]byte, 64)
	stdout.Read(buf) // "ready"
	return &child{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid}
}

func BenchmarkRefresh(b *testing.B) {
	for _, mode := range []string{"idle 1000", "yield 1000", "idle 10000"} {
		var n int
		var kind string
		fmt.Sscan(mode, &kind, &n)
		name := fmt.Sprint(n)
		if kind == "yield" {
			name += "+busy"
		}
		b.Run(name, func(b *testing.B) {
			c := startChildB(b, mode)
			s, err := sampler.New(sampler.Options{PIDs: []int{c.pid}, Threads: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var x sampler.Sample
			s.RefreshInto(&x)
			s.RefreshInto(&x)
			b.ResetTimer()
			reads, degraded := 0, 0
			for b.Loop() {
				if err := s.RefreshInto(&x); err != nil {
					b.Fatal(err)
				}
				st := s.Stats()
				reads += st.Reads
				degraded = max(degraded, st.Degraded)
			}
			b.StopTimer()
			per := float64(b.N) * float64(len(x.Threads))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/thread")
			b.ReportMetric(float64(reads)/per, "reads/thread")
			b.ReportMetric(float64(degraded), "degraded")
		})
	}
}

func BenchmarkRawPread(b *testing.B) {
	for _, mode := range []string{"idle 1000", "yield 1000"} {
		name := "1000"
		if strings.HasPrefix(mode, "yield") {
			name += "+busy"
		}
		b.Run(name, func(b *testing.B) { rawPread(b, startChildB(b, mode)) })
	}
}

func rawPread(b *testing.B, c *child) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", c.pid))
	if err != nil {
		b.Fatal(err)
	}
	var fds []int
	for _, e := range ents {
		fd, err := unix.Open(fmt.Sprintf("/proc/%d/task/%s/schedstat", c.pid, e.Name()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		fds = append(fds, fd)
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var buf [4096]byte
	for b.Loop() {
		for _, fd := range fds {
			if _, err := unix.Pread(fd, buf[:], 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(fds)), "ns/thread")
}

func BenchmarkRescan(b *testing.B) {
	c := idleChild(b, 1000)
	n := 0
	for b.Loop() {
		n = 0
		for _, err := range cputime.Threads(c.pid) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/thread")
}
