package exporter

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProcessCPU, descProcessStart, descProcessThreads, descProcessExit, descDenied, descDeniedN,
		descReadErrors, descDuration, descExitedDropped, descExitRecords, descCollectErrors} {
		ch <- d
	}
	if c.exits != nil {
		ch <- descRecordsDropped
	} else {
		ch <- descNotFinal
	}
	if c.opts.Threads {
		ch <- descThreadCPU
		ch <- descThreadStart
		ch <- descThreadExit
		ch <- descDropped
	}
	if c.forks != nil {
		ch <- descUnseen
	}
	if c.opts.Cgroups {
		ch <- descCgroupInfo
	}
}

// Collect refreshes the watched tasks and sends their metrics, with the
// final values of the tasks that exited within Options.ExitedKeep. An
// error is sent as an invalid metric (the registry reports it) and
// counted in cputime_collect_errors_total; it never ends the rest of the
// collection: a failed refresh leaves the values of the last one.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		ch <- prometheus.NewInvalidMetric(descDuration, errClosed)
		return
	}
	// The kernel's count of tasks created is read before the refresh, so
	// every task it counts had its chance to be seen by then; read after,
	// a task created in between would count as unseen for good.
	forks, forksErr := uint64(0), errors.New("not read")
	if c.forkOK {
		forks, forksErr = c.forks()
	}
	if err := c.refresh(); err != nil {
		c.errs.add(ch, descProcessCPU, reasonRefresh, fmt.Errorf("refreshing tasks: %w", err))
	}
	var procs, threads []*task
	for _, t := range c.live {
		if t.tid == 0 {
			procs = append(procs, t)
		} else {
			threads = append(threads, t)
		}
	}
	if n := c.opts.MaxThreads; n >= 0 && len(threads) > n {
		slices.SortFunc(threads, func(a, b *task) int {
			return cmp.Or(cmp.Compare(b.total()-b.lastTotal, a.total()-a.lastTotal), cmp.Compare(b.total(), a.total()), cmp.Compare(a.tid, b.tid))
		})
		c.dropped += uint64(len(threads) - n)
		for _, t := range threads[n:] {
			t.lastTotal = t.total()
		}
		threads = threads[:n]
	}
	exited := 0
	for _, t := range c.exited {
		if t.tid == 0 || t.scraped {
			exited++
		}
	}
	// One allocation for the scrape's series: the registry holds them
	// until it has encoded them, after this returns.
	ms := make([]constMetric, 0, 4*len(procs)+3*len(threads)+4*exited)
	send := func(t *task, exit bool) {
		cpu, st, ex := descProcessCPU, descProcessStart, descProcessExit
		if t.tid != 0 {
			cpu, st, ex = descThreadCPU, descThreadStart, descThreadExit
		}
		ms = append(ms, constMetric{}, constMetric{}, constMetric{})
		m := ms[len(ms)-3:]
		m[0].set(cpu, t.lab.user, t.user.Seconds(), true)
		m[1].set(cpu, t.lab.system, t.kernel.Seconds(), true)
		m[2].set(st, t.lab.plain, seconds(t.creation), false)
		ch <- &m[0]
		ch <- &m[1]
		ch <- &m[2]
		if exit {
			ms = append(ms, constMetric{})
			m := &ms[len(ms)-1]
			m.set(ex, t.lab.plain, seconds(t.exit), false)
			ch <- m
		} else if t.tid == 0 {
			ms = append(ms, constMetric{})
			m := &ms[len(ms)-1]
			m.set(descProcessThreads, t.lab.plain, float64(t.threads), false)
			ch <- m
		}
		t.scraped = true
		t.lastTotal = t.total()
	}
	for _, t := range procs {
		send(t, false)
	}
	for _, t := range threads {
		send(t, false)
	}
	for _, t := range c.exited {
		// A thread left out by the cap while it lived stays left out.
		if t.tid == 0 || t.scraped {
			send(t, true)
		}
	}
	if c.opts.Cgroups {
		c.sendCgroups(ch, procs)
	}
	for _, d := range c.denied {
		c.errs.send(ch, descDenied, prometheus.GaugeValue, 1, strconv.Itoa(d.PID))
	}
	c.errs.send(ch, descDeniedN, prometheus.GaugeValue, float64(len(c.denied)))
	if c.opts.Threads {
		c.errs.send(ch, descDropped, prometheus.CounterValue, float64(c.dropped))
	}
	c.errs.send(ch, descExitedDropped, prometheus.CounterValue, float64(c.exitedDropped))
	if c.exits != nil {
		c.errs.send(ch, descRecordsDropped, prometheus.CounterValue, float64(c.recordsDropped))
		c.errs.send(ch, descExitRecords, prometheus.GaugeValue, 1)
	} else {
		c.errs.send(ch, descExitRecords, prometheus.GaugeValue, 0)
		c.errs.send(ch, descNotFinal, prometheus.CounterValue, float64(c.notFinal))
	}
	if forksErr == nil && forks >= c.forkBase {
		// Never back: seen may count tasks created after the read.
		c.unseen = max(c.unseen, (forks-c.forkBase)-min(forks-c.forkBase, c.seen))
	}
	if c.forks != nil && (c.forkOK || c.exits != nil) {
		c.errs.send(ch, descUnseen, prometheus.CounterValue, float64(c.unseen))
	}
	c.errs.send(ch, descReadErrors, prometheus.CounterValue, float64(c.readErrors))
	c.errs.export(ch, reasonRefresh, reasonMetric)
	c.errs.send(ch, descDuration, prometheus.GaugeValue, time.Since(start).Seconds())
}

// sendCgroups sends the cgroup of each live process (read when first
// seen, and again when its CPU time moved since the last read: a process
// is moved between cgroups by others, typically right after it starts)
// and of each exited one as last read.
func (c *Collector) sendCgroups(ch chan<- prometheus.Metric, procs []*task) {
	send := func(t *task) {
		if t.cg != nil && t.cg.Path != "" {
			c.errs.send(ch, descCgroupInfo, prometheus.GaugeValue, 1, strconv.Itoa(t.pid), t.start, LabelValue(t.cg.Path), t.cg.ContainerID, LabelValue(t.cg.Unit))
		}
	}
	for _, t := range procs {
		if t.cg == nil || t.total() != t.cgTotal {
			cg := readCgroup(t.pid)
			if cg.Path != "" || t.cg == nil {
				t.cg = &cg
			}
			t.cgTotal = t.total()
		}
		send(t)
	}
	for _, t := range c.exited {
		if t.tid == 0 {
			send(t)
		}
	}
}

// seconds is an instant as float seconds since the Unix epoch: whole
// seconds and nanoseconds converted apart, so that an instant with a short
// decimal form keeps it.
func seconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }
