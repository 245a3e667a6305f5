//go:build linux

package bench

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
)

// BenchmarkThreads lists every thread of a process with N threads, with
// each thread's times. The work differs in what each library can give:
//
//   - cputime: Threads(pid), each record with id, name, creation instant and
//     the exact kernel/user split (two files a thread: stat and schedstat);
//   - gopsutil: (*Process).Threads(), its only call for threads, which maps
//     each thread id to tick-sampled user and system time and nothing else
//     (it reads each thread's stat, plus /proc/stat for the boot time and a
//     getpriority call, both per thread); gopsutil_bootcache is the same
//     with process.EnableBootTimeCache(true), which spares the /proc/stat
//     read;
//   - procfs: FS.AllThreads(pid), then Stat() on each, taking the name, the
//     tick-sampled times and the start time, converted to an instant with
//     the boot time read once per scan (FS.Stat), as a careful user would
//     rather than calling ProcStat.StartTime per thread, which rereads
//     /proc/stat each time;
//   - procfs_schedstat: procfs reading schedstat too, for cputime's
//     precision (not a usual use of procfs, for comparison of equal work).
//
// Before timing, one instrumented scan measures the live heap the scan
// holds (after a GC at a tenth of the way through, and so on) and reports the
// peak over the baseline per thread as live-B/thread; one cputime.ThreadInfo
// record is 96 bytes plus its name (TestRecordSize). cpu-ns/op is the CPU
// time the benchmark process spent per scan, on all its threads: cputime
// spreads a large scan over up to GOMAXPROCS workers, the peers scan on one
// thread, so ns/op favours cputime where a CPU is free and cpu-ns/op
// compares the work done.
func BenchmarkThreads(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			if n > 1000 && testing.Short() {
				b.Skip("skipping the 10,000-thread process in -short mode")
			}
			c := startChild(b, "threads:"+strconv.Itoa(n))
			pid := c.PID()
			b.Run("cputime", func(b *testing.B) {
				benchScan(b, n, func(probe func(int)) int {
					i := 0
					for th, err := range cputime.Threads(pid) {
						if err != nil {
							b.Fatal(err)
						}
						sinkDuration = th.Times.Kernel + th.Times.User
						sinkString = th.Name
						sinkTime = th.Times.Creation
						i++
						probe(i)
					}
					return i
				})
			})
			b.Run("gopsutil", func(b *testing.B) {
				p, err := process.NewProcess(int32(pid))
				if err != nil {
					b.Fatal(err)
				}
				benchScan(b, n, func(probe func(int)) int {
					m, err := p.Threads()
					if err != nil {
						b.Fatal(err)
					}
					i := 0
					for _, t := range m {
						sinkFloat = t.User + t.System
						i++
						probe(i)
					}
					return i
				})
			})
			// gopsutil with its boot time cache on (off by default), which
			// spares it the read of /proc/stat per thread.
			b.Run("gopsutil_bootcache", func(b *testing.B) {
				process.EnableBootTimeCache(true)
				defer process.EnableBootTimeCache(false)
				p, err := process.NewProcess(int32(pid))
				if err != nil {
					b.Fatal(err)
				}
				benchScan(b, n, func(probe func(int)) int {
					m, err := p.Threads()
					if err != nil {
						b.Fatal(err)
					}
					i := 0
					for _, t := range m {
						sinkFloat = t.User + t.System
						i++
						probe(i)
					}
					return i
				})
			})
			b.Run("procfs", func(b *testing.B) {
				fs := procFS(b)
				benchScan(b, n, func(probe func(int)) int {
					st, err := fs.Stat()
					if err != nil {
						b.Fatal(err)
					}
					threads, err := fs.AllThreads(pid)
					if err != nil {
						b.Fatal(err)
					}
					i := 0
					for _, t := range threads {
						s, err := t.Stat()
						if err != nil {
							continue // exited since the listing
						}
						sinkFloat = s.CPUTime()
						sinkString = s.Comm
						sinkTime = time.Unix(int64(st.BootTime), 0).Add(time.Duration(s.Starttime) * 10 * time.Millisecond)
						i++
						probe(i)
					}
					return i
				})
			})
			// procfs doing what cputime does per thread: stat for the name,
			// start and split, and schedstat for the exact total. Not a
			// usual use of procfs; it shows the cost of equal precision.
			b.Run("procfs_schedstat", func(b *testing.B) {
				fs := procFS(b)
				benchScan(b, n, func(probe func(int)) int {
					st, err := fs.Stat()
					if err != nil {
						b.Fatal(err)
					}
					threads, err := fs.AllThreads(pid)
					if err != nil {
						b.Fatal(err)
					}
					i := 0
					for _, t := range threads {
						s, err := t.Stat()
						if err != nil {
							continue
						}
						ss, err := t.Schedstat()
						if err != nil {
							continue
						}
						sinkDuration = time.Duration(ss.RunningNanoseconds)
						sinkFloat = s.CPUTime()
						sinkString = s.Comm
						sinkTime = time.Unix(int64(st.BootTime), 0).Add(time.Duration(s.Starttime) * 10 * time.Millisecond)
						i++
						probe(i)
					}
					return i
				})
			})
		})
	}
}

var sinkString string
var sinkTime time.Time

// benchScan times scan, which calls probe after each thread and returns the
// number of threads it saw; it must see at least n.
func benchScan(b *testing.B, n int, scan func(probe func(int)) int) {
	live := peakLivePerThread(n, scan)
	noProbe := func(int) {}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if got := scan(noProbe); got < n {
			b.Fatalf("saw %d threads, want at least %d", got, n)
		}
	}
	// After the loop: b.Loop's first call clears metrics reported before.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(live, "live-B/thread")
}

// cpuTime returns the CPU time of this process so far, user + system, from
// getrusage: independent of the library under test. A scan that runs on
// several CPUs shows more cpu-ns/op than ns/op.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakLivePerThread runs scan once to warm up (state a library keeps across
// scans, such as cputime's bounded cache of per-task splits, then counts in
// the baseline), then again, collecting garbage ten times along the way, and
// returns the largest growth of the live heap over the baseline, per thread.
func peakLivePerThread(n int, scan func(probe func(int)) int) float64 {
	var ms runtime.MemStats
	live := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	scan(func(int) {})
	base := live()
	peak := base
	every := max(n/10, 1)
	scan(func(i int) {
		if i%every == 0 {
			peak = max(peak, live())
		}
	})
	return float64(peak-base) / float64(n)
}
