package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/procfs"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/bench/internal/child"
)

// reader returns a task's CPU time (kernel + user) as one library shows it.
type reader struct {
	lib  string
	read func() (time.Duration, error)
}

func run(window time.Duration, children int) error {
	if window <= 0 {
		window = 300 * time.Millisecond
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return err
	}

	// A busy thread of this process.
	stop := make(chan struct{})
	ready := make(chan int)
	go func() {
		runtime.LockOSThread()
		ready <- cputime.CurrentThreadID()
		child.Spin(stop)
	}()
	ownTID := <-ready
	defer close(stop)

	// A busy thread in another process; that process is the busy process.
	c, err := child.Start("spin")
	if err != nil {
		return err
	}
	defer c.Stop()

	fmt.Printf("## Precision: smallest nonzero increment between reads\n\n")
	fmt.Printf("Each reader is called back to back for %v while the task spins on the other CPU; the table shows the smallest and the median nonzero change of kernel+user between two successive reads, and how many reads it took per change.\n\n", window)
	fmt.Println("| task | library (call) | smallest increment | median increment | reads per change |")
	fmt.Println("|---|---|---|---|---|")
	cases := []struct {
		task    string
		readers func() ([]reader, func(), error)
	}{
		{"busy thread, own process", func() ([]reader, func(), error) {
			return threadReaders(fs, os.Getpid(), ownTID)
		}},
		{"busy thread, other process", func() ([]reader, func(), error) {
			return threadReaders(fs, c.PID(), c.TID)
		}},
		{"busy process, other", func() ([]reader, func(), error) {
			return processReaders(fs, c.PID())
		}},
		{"calling process (one thread busy)", func() ([]reader, func(), error) {
			return processReaders(fs, os.Getpid())
		}},
	}
	for _, cs := range cases {
		rs, closeAll, err := cs.readers()
		if err != nil {
			return fmt.Errorf("%s: %w", cs.task, err)
		}
		for _, r := range rs {
			small, median, perChange, err := increments(r.read, window)
			if err != nil {
				closeAll()
				return fmt.Errorf("%s, %s: %w", cs.task, r.lib, err)
			}
			fmt.Printf("| %s | %s | %s | %s | %s |\n", cs.task, r.lib, fmtDur(small), fmtDur(median), perChange)
		}
		closeAll()
	}

	fmt.Printf("\n## Accuracy: creation time of %d children\n\n", children)
	return creationErrors(fs, children)
}

func threadReaders(fs procfs.FS, pid, tid int) ([]reader, func(), error) {
	h, err := cputime.OpenThread(tid)
	if err != nil {
		return nil, nil, err
	}
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	t, err := fs.Thread(pid, tid)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return []reader{
		{"cputime (`Thread.Times`)", func() (time.Duration, error) {
			x, err := h.Times()
			return x.Total(), err
		}},
		{"gopsutil (`Process.Threads()[tid]`)", func() (time.Duration, error) {
			m, err := p.Threads()
			if err != nil {
				return 0, err
			}
			x, ok := m[int32(tid)]
			if !ok {
				return 0, fmt.Errorf("thread %d not listed", tid)
			}
			return seconds(x.User + x.System), nil
		}},
		{"procfs (`Stat().CPUTime()`)", func() (time.Duration, error) {
			s, err := t.Stat()
			return seconds(s.CPUTime()), err
		}},
		{"procfs (`Schedstat()`, total only, no user/kernel split)", func() (time.Duration, error) {
			s, err := t.Schedstat()
			return time.Duration(s.RunningNanoseconds), err
		}},
	}, func() { h.Close() }, nil
}

func processReaders(fs procfs.FS, pid int) ([]reader, func(), error) {
	h := cputime.CurrentProcess()
	if pid != os.Getpid() {
		var err error
		if h, err = cputime.OpenProcess(pid); err != nil {
			return nil, nil, err
		}
	}
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	pr, err := fs.Proc(pid)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	// procfs's Schedstat of a process is its main thread's, not the sum, so
	// it has no row here.
	return []reader{
		{"cputime (`Process.Times`)", func() (time.Duration, error) {
			x, err := h.Times()
			return x.Total(), err
		}},
		{"gopsutil (`Process.Times`)", func() (time.Duration, error) {
			x, err := p.Times()
			if err != nil {
				return 0, err
			}
			return seconds(x.User + x.System), nil
		}},
		{"procfs (`Stat().CPUTime()`)", func() (time.Duration, error) {
			s, err := pr.Stat()
			return seconds(s.CPUTime()), err
		}},
	}, func() { h.Close() }, nil
}

// increments calls read back to back for window and returns the smallest and
// the median positive difference between successive values, and the reads
// per change.
func increments(read func() (time.Duration, error), window time.Duration) (small, median time.Duration, perChange string, err error) {
	prev, err := read()
	if err != nil {
		return 0, 0, "", err
	}
	var deltas []time.Duration
	reads := 0
	for end := time.Now().Add(window); time.Now().Before(end); {
		v, err := read()
		if err != nil {
			return 0, 0, "", err
		}
		reads++
		if v < prev {
			return 0, 0, "", fmt.Errorf("went backwards: %v after %v", v, prev)
		}
		if v > prev {
			deltas = append(deltas, v-prev)
		}
		prev = v
	}
	if len(deltas) == 0 {
		return 0, 0, fmt.Sprintf("no change in %d reads", reads), nil
	}
	slices.Sort(deltas)
	return deltas[0], deltas[len(deltas)/2], fmt.Sprintf("%.1f", float64(reads)/float64(len(deltas))), nil
}

// creationErrors starts n idle children one after another, at random phases
// of the clock tick, and prints each library's creation-time error against
// the instant taken just before the fork.
func creationErrors(fs procfs.FS, n int) error {
	type stat struct {
		lib  string
		errs []time.Duration
	}
	stats := []*stat{
		{lib: "cputime (`ProcessTimes(pid).Creation`)"},
		{lib: "gopsutil (`Process.CreateTime()`)"},
		{lib: "procfs (`Stat().StartTime()`)"},
	}
	var window time.Duration
	for range n {
		time.Sleep(time.Duration(rand.Int64N(int64(20 * time.Millisecond))))
		c, err := child.Start("idle")
		if err != nil {
			return err
		}
		window += c.After.Sub(c.Before)
		pid := c.PID()
		got := make([]time.Time, 3)
		t, err := cputime.ProcessTimes(pid)
		if err == nil {
			got[0] = t.Creation
			var p *process.Process
			if p, err = process.NewProcess(int32(pid)); err == nil {
				var ms int64
				ms, err = p.CreateTime()
				got[1] = time.UnixMilli(ms)
			}
		}
		if err == nil {
			var pr procfs.Proc
			if pr, err = fs.Proc(pid); err == nil {
				var s procfs.ProcStat
				if s, err = pr.Stat(); err == nil {
					var sec float64
					sec, err = s.StartTime()
					whole, frac := math.Modf(sec)
					got[2] = time.Unix(int64(whole), int64(math.Round(frac*1e9)))
				}
			}
		}
		c.Stop()
		if err != nil {
			return err
		}
		for i, g := range got {
			stats[i].errs = append(stats[i].errs, g.Sub(c.Before))
		}
	}
	fmt.Printf("Error = reported creation time − the instant taken just before `exec.Cmd.Start` (the fork follows within %s on average: the mean time Start took). The kernel keeps the start in 10 ms USER_HZ ticks since boot; gopsutil and procfs add it to `/proc/stat`'s `btime`, whole seconds.\n\n", fmtDur(window/time.Duration(n)))
	fmt.Println("| library (call) | mean error | min | max | within ±10 ms |")
	fmt.Println("|---|---|---|---|---|")
	for _, s := range stats {
		var sum time.Duration
		within := 0
		for _, e := range s.errs {
			sum += e
			if e.Abs() <= 10*time.Millisecond {
				within++
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %d of %d |\n", s.lib, fmtDur(sum/time.Duration(len(s.errs))), fmtDur(slices.Min(s.errs)), fmtDur(slices.Max(s.errs)), within, len(s.errs))
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// fmtDur prints d with a sign and at most four significant digits.
func fmtDur(d time.Duration) string {
	switch a := d.Abs(); {
	case a == 0:
		return "0"
	case a < time.Microsecond:
		return fmt.Sprintf("%d ns", d)
	case a < time.Millisecond:
		return fmt.Sprintf("%.3g µs", float64(d)/1e3)
	case a < time.Second:
		return fmt.Sprintf("%.4g ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.4g s", d.Seconds())
}
