package exporter

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/sampler"
)

// DefaultMaxThreads is the number of threads whose series one scrape
// exports with Options.Threads, when Options.MaxThreads is zero: the
// threads that used the most CPU since the previous scrape.
const DefaultMaxThreads = 1000

// DefaultSampleInterval is how often the collector refreshes the processes
// between scrapes, when Options.SampleInterval is zero, so that a process
// that lives a fraction of a scrape interval is still seen and exported
// with its final times.
const DefaultSampleInterval = 100 * time.Millisecond

// maxPending bounds the exited processes kept for the next scrape, so
// that memory stays bounded when nothing scrapes.
const maxPending = 10000

// Options selects what a Collector exports.
type Options struct {
	// PIDs, if not empty, limits the export to these processes.
	PIDs []int
	// Name, if set, limits the export to the processes whose name (Linux:
	// comm, at most 15 bytes) it matches.
	Name *regexp.Regexp
	// Threads adds a series per thread (cputime_thread_*), for at most
	// MaxThreads threads per scrape.
	Threads bool
	// MaxThreads caps the threads exported by one scrape: those that used
	// the most CPU since the previous scrape (in the first scrape, the most
	// CPU in all), the others counted in
	// cputime_thread_series_dropped_total. Zero means DefaultMaxThreads;
	// negative means no cap.
	MaxThreads int
	// SampleInterval is how often processes are refreshed between scrapes,
	// to catch the short-lived ones. Zero means DefaultSampleInterval;
	// negative means only at scrapes (a process that lives between two
	// scrapes is then never seen).
	SampleInterval time.Duration
}

// source is what the collector refreshes: a *sampler.Sampler, or a fake in
// tests.
type source interface {
	RefreshInto(*sampler.Sample) error
	Close() error
}

// Collector is a prometheus.Collector of the CPU times of processes (and
// optionally their threads). It is safe for concurrent use; concurrent
// scrapes are served one after the other.
type Collector struct {
	opts    Options
	forks   func() (uint64, error) // the kernel's count of tasks created since boot; nil: not exported
	procs   source
	threads source // nil without Options.Threads

	mu      sync.Mutex
	ps, ts  sampler.Sample
	pending []sampler.Exited // processes exited since the previous scrape
	closed  bool

	// Tasks seen to appear, against the kernel's fork count, for
	// cputime_unseen_tasks_total.
	forkBase, seen, unseen uint64
	forkOK                 bool
	dropped                uint64 // thread series left out by the cap
	readErrors             uint64
	tlabels                []threadLabels // reused by each scrape
	tseries                map[threadKey]*threadSeries
	scrapes                uint64

	stop chan struct{}
	done chan struct{}
}

var (
	labelsProcess = []string{"pid", "name"}
	labelsMode    = []string{"pid", "name", "mode"}
	labelsThread  = []string{"pid", "tid", "name"}
	labelsTMode   = []string{"pid", "tid", "name", "mode"}

	descProcessCPU = prometheus.NewDesc("cputime_process_cpu_seconds_total",
		"CPU time of the process in each mode (user, system), exited threads included: the kernel's exact run time in ns divided by 1e9, split by its tick samples.", labelsMode, nil)
	descProcessStart = prometheus.NewDesc("cputime_process_start_time_seconds",
		"Creation time of the process, seconds since the Unix epoch (the kernel's start time in CLOCK_BOOTTIME, not /proc/stat btime).", labelsProcess, nil)
	descProcessThreads = prometheus.NewDesc("cputime_process_threads",
		"Number of live threads of the process.", labelsProcess, nil)
	descProcessExit = prometheus.NewDesc("cputime_process_exit_time_seconds",
		"Exit time of a process that exited since the previous scrape, seconds since the Unix epoch (the instant its pidfd reported, else the first instant it was seen gone); exported in one scrape, with its final CPU time.", labelsProcess, nil)
	descThreadCPU = prometheus.NewDesc("cputime_thread_cpu_seconds_total",
		"CPU time of the thread in each mode (user, system): the kernel's exact run time in ns divided by 1e9.", labelsTMode, nil)
	descThreadStart = prometheus.NewDesc("cputime_thread_start_time_seconds",
		"Creation time of the thread, seconds since the Unix epoch.", labelsThread, nil)
	descDropped = prometheus.NewDesc("cputime_thread_series_dropped_total",
		"Thread series left out of scrapes by the cap on threads per scrape (--threads.max), summed over scrapes.", nil, nil)
	descUnseen = prometheus.NewDesc("cputime_unseen_tasks_total",
		"Tasks (processes and threads) the kernel created since the exporter started that came and went without being exported as series of their own: the kernel's fork count (/proc/stat processes) less the tasks seen appear. Only when every process is watched.", nil, nil)
	descReadErrors = prometheus.NewDesc("cputime_read_errors_total",
		"Reads of single tasks that failed (a value the kernel could not have produced, access denied); the task is left out of that scrape.", nil, nil)
	descDenied = prometheus.NewDesc("cputime_process_access_denied",
		"1 for each process that exists but whose files the exporter may not read (another user's under hidepid=1, ptrace rules): its other series are absent. count(cputime_process_access_denied) says how many.", []string{"pid"}, nil)
	descDeniedN = prometheus.NewDesc("cputime_processes_access_denied",
		"Number of processes this scrape found but may not read (see cputime_process_access_denied).", nil, nil)
	descDuration = prometheus.NewDesc("cputime_scrape_duration_seconds",
		"Wall time this scrape took to read the tasks and build the metrics.", nil, nil)
)

// New returns a collector for opts. Close it to release what its samplers
// keep open and stop its background refreshes.
func New(opts Options) (*Collector, error) {
	so := sampler.Options{PIDs: opts.PIDs}
	if opts.Name != nil {
		so.Match = opts.Name.MatchString
	}
	procs, err := sampler.New(so)
	if err != nil {
		return nil, fmt.Errorf("exporter: %w", err)
	}
	var threads source
	if opts.Threads {
		so.Threads = true
		t, err := sampler.New(so)
		if err != nil {
			procs.Close()
			return nil, fmt.Errorf("exporter: %w", err)
		}
		threads = t
	}
	var forks func() (uint64, error)
	if len(opts.PIDs) == 0 && opts.Name == nil {
		forks = kernelForks
	}
	return newCollector(opts, procs, threads, forks)
}

func newCollector(opts Options, procs, threads source, forks func() (uint64, error)) (*Collector, error) {
	if opts.MaxThreads == 0 {
		opts.MaxThreads = DefaultMaxThreads
	}
	if opts.SampleInterval == 0 {
		opts.SampleInterval = DefaultSampleInterval
	}
	c := &Collector{opts: opts, procs: procs, threads: threads, forks: forks}
	// The first refreshes set the baseline: what is there already was not
	// "seen appear", and the kernel's fork count starts here.
	c.mu.Lock()
	defer c.mu.Unlock()
	if forks != nil {
		if n, err := forks(); err == nil {
			c.forkBase, c.forkOK = n, true
		}
	}
	if err := c.refreshProcs(); err != nil {
		c.closeSources()
		return nil, fmt.Errorf("exporter: %w", err)
	}
	c.pending = c.pending[:0] // exits before the first scrape's baseline
	if threads != nil {
		if err := threads.RefreshInto(&c.ts); err != nil {
			c.closeSources()
			return nil, fmt.Errorf("exporter: %w", err)
		}
	}
	if opts.SampleInterval > 0 {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.background()
	}
	return c, nil
}

// kernelForks reads the number of tasks created since boot.
func kernelForks() (uint64, error) { return forksFrom("/proc/stat") }

func (c *Collector) background() {
	defer close(c.done)
	t := time.NewTicker(c.opts.SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			c.refreshProcs() // a failure shows at the next scrape
			c.mu.Unlock()
		}
	}
}

// refreshProcs refreshes the processes, keeping the ones that exited for
// the next scrape. c.mu is held.
func (c *Collector) refreshProcs() error {
	if err := c.procs.RefreshInto(&c.ps); err != nil {
		return err
	}
	for _, p := range c.ps.Processes {
		if p.New {
			c.seen++
		}
	}
	c.pending = append(c.pending, c.ps.ExitedProcesses...)
	if n := len(c.pending) - maxPending; n > 0 {
		// Nobody scrapes: keep the latest exits, and count the others as
		// never exported.
		c.pending = c.pending[:copy(c.pending, c.pending[n:])]
		c.seen -= min(c.seen, uint64(n))
	}
	c.readErrors += uint64(len(c.ps.Errors))
	return nil
}

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProcessCPU, descProcessStart, descProcessThreads, descProcessExit, descDenied, descDeniedN, descReadErrors, descDuration} {
		ch <- d
	}
	if c.threads != nil {
		ch <- descThreadCPU
		ch <- descThreadStart
		ch <- descDropped
	}
	if c.forks != nil {
		ch <- descUnseen
	}
}

// Collect refreshes the watched tasks and sends their metrics, with the
// final values of the processes that exited since the previous scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		ch <- prometheus.NewInvalidMetric(descDuration, errClosed)
		return
	}
	if err := c.refreshProcs(); err != nil {
		ch <- prometheus.NewInvalidMetric(descProcessCPU, fmt.Errorf("refreshing processes: %w", err))
		return
	}
	live := make(map[string]struct{}, len(c.pending))
	for _, p := range c.ps.Processes {
		name := LabelValue(p.Name)
		pid := strconv.Itoa(p.PID)
		if len(c.pending) > 0 {
			live[pid+"\x00"+name] = struct{}{}
		}
		sendProcess(ch, p, pid, name)
		ch <- prometheus.MustNewConstMetric(descProcessThreads, prometheus.GaugeValue, float64(p.Threads), pid, name)
	}
	// A process that exited since the previous scrape: its final values
	// and exit time, once. Where a new process took its id and name, the
	// live one's series wins; of two exited ones, the later.
	for i := len(c.pending) - 1; i >= 0; i-- {
		e := c.pending[i]
		name := LabelValue(e.Name)
		pid := strconv.Itoa(e.PID)
		k := pid + "\x00" + name
		if _, dup := live[k]; dup {
			continue
		}
		live[k] = struct{}{}
		sendProcess(ch, e.Task, pid, name)
		exit := e.Times.Exit
		if exit.IsZero() {
			exit = e.GoneAt
		}
		ch <- prometheus.MustNewConstMetric(descProcessExit, prometheus.GaugeValue, seconds(exit), pid, name)
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	for _, d := range c.ps.Denied {
		ch <- prometheus.MustNewConstMetric(descDenied, prometheus.GaugeValue, 1, strconv.Itoa(d.PID))
	}
	ch <- prometheus.MustNewConstMetric(descDeniedN, prometheus.GaugeValue, float64(len(c.ps.Denied)))

	if c.threads != nil {
		if err := c.collectThreads(ch); err != nil {
			ch <- prometheus.NewInvalidMetric(descThreadCPU, fmt.Errorf("refreshing threads: %w", err))
		}
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(c.dropped))
	}
	if c.forks != nil && c.forkOK {
		if n, err := c.forks(); err == nil && n >= c.forkBase {
			// Never back: a task seen appear may be counted by the
			// kernel after our read of its count.
			c.unseen = max(c.unseen, (n-c.forkBase)-min(n-c.forkBase, c.seen))
		}
		ch <- prometheus.MustNewConstMetric(descUnseen, prometheus.CounterValue, float64(c.unseen))
	}
	ch <- prometheus.MustNewConstMetric(descReadErrors, prometheus.CounterValue, float64(c.readErrors))
	ch <- prometheus.MustNewConstMetric(descDuration, prometheus.GaugeValue, time.Since(start).Seconds())
}

func (c *Collector) collectThreads(ch chan<- prometheus.Metric) error {
	if err := c.threads.RefreshInto(&c.ts); err != nil {
		return err
	}
	c.readErrors += uint64(len(c.ts.Errors))
	ts := c.ts.Threads
	for _, t := range ts {
		// A new process's main thread is the process, counted already.
		if t.New && t.TID != t.PID {
			c.seen++
		}
	}
	if n := c.opts.MaxThreads; n >= 0 && len(ts) > n {
		slices.SortFunc(ts, func(a, b sampler.Task) int {
			return cmp.Or(cmp.Compare(b.Delta, a.Delta), cmp.Compare(b.Times.Total(), a.Times.Total()), cmp.Compare(a.TID, b.TID))
		})
		c.dropped += uint64(len(ts) - n)
		ts = ts[:n]
	}
	// Sent in the order the registry sorts series in (by label values,
	// labels by name: mode, name, pid, tid), which makes its sort of
	// thousands of series a linear pass.
	if c.tseries == nil {
		c.tseries = make(map[threadKey]*threadSeries)
	}
	c.scrapes++
	ls := c.tlabels[:0]
	for _, t := range ts {
		name := LabelValue(t.Name)
		k := threadKey{pid: t.PID, tid: t.TID, name: name}
		sr := c.tseries[k]
		if sr == nil {
			sr = newThreadSeries(strconv.Itoa(t.PID), strconv.Itoa(t.TID), name)
			c.tseries[k] = sr
		}
		sr.scrape = c.scrapes
		ls = append(ls, threadLabels{pid: *sr.start[1].Value, tid: *sr.start[2].Value, name: name, t: &t.Times, series: sr})
	}
	for k, sr := range c.tseries {
		if sr.scrape != c.scrapes {
			delete(c.tseries, k)
		}
	}
	slices.SortFunc(ls, func(a, b threadLabels) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.pid, b.pid), strings.Compare(a.tid, b.tid))
	})
	// One allocation for the scrape's series: the registry holds them
	// until it has encoded them, after this returns.
	ms := make([]constMetric, 3*len(ls))
	for i, l := range ls {
		ms[i].set(descThreadCPU, l.series.system, l.t.Kernel.Seconds(), true)
		ch <- &ms[i]
	}
	for i, l := range ls {
		m := &ms[len(ls)+i]
		m.set(descThreadCPU, l.series.user, l.t.User.Seconds(), true)
		ch <- m
	}
	for i, l := range ls {
		m := &ms[2*len(ls)+i]
		m.set(descThreadStart, l.series.start, seconds(l.t.Creation), false)
		ch <- m
	}
	clear(ls)
	c.tlabels = ls[:0]
	return nil
}

// threadLabels is one thread's label values and times, for one scrape.
type threadLabels struct {
	pid, tid, name string
	t              *cputime.Times
	series         *threadSeries
}

func sendProcess(ch chan<- prometheus.Metric, p sampler.Task, pid, name string) {
	ch <- prometheus.MustNewConstMetric(descProcessCPU, prometheus.CounterValue, p.Times.User.Seconds(), pid, name, "user")
	ch <- prometheus.MustNewConstMetric(descProcessCPU, prometheus.CounterValue, p.Times.Kernel.Seconds(), pid, name, "system")
	ch <- prometheus.MustNewConstMetric(descProcessStart, prometheus.GaugeValue, seconds(p.Times.Creation), pid, name)
}

// seconds is an instant as float seconds since the Unix epoch: whole
// seconds and nanoseconds converted apart, so that an instant with a short
// decimal form keeps it.
func seconds(t time.Time) float64 { return float64(t.Unix()) + float64(t.Nanosecond())/1e9 }

var errClosed = errors.New("exporter: collector closed")

// Close stops the background refreshes and releases the samplers'
// descriptors. Collect exports nothing after it; closing twice is harmless.
func (c *Collector) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	if c.stop != nil {
		close(c.stop)
		<-c.done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeSources()
}

func (c *Collector) closeSources() error {
	err := c.procs.Close()
	if c.threads != nil {
		err = errors.Join(err, c.threads.Close())
	}
	return err
}

// LabelValue is a task name as a label value: valid UTF-8, with control
// characters and bidirectional overrides shown as '?', the way ps shows
// untrusted names.
func LabelValue(name string) string {
	clean := true
	for _, r := range name {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			b.WriteByte('?')
		} else {
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// forksFrom reads the "processes" line of a /proc/stat file: the tasks
// (processes and threads) created since boot.
func forksFrom(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "processes "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s: processes %q: %w", path, strings.TrimSpace(v), cputime.ErrInvalidData)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("parsing %s: no processes line: %w", path, cputime.ErrInvalidData)
}
