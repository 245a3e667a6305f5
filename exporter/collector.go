package exporter

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cputime/cputime/sampler"
)

// DefaultMaxThreads is the number of threads whose series one scrape
// exports with Options.Threads, when Options.MaxThreads is zero: the
// threads that used the most CPU since the previous scrape.
const DefaultMaxThreads = 1000

// DefaultSampleInterval is how often the collector refreshes the tasks
// between scrapes when the kernel's exit records cannot be had (see the
// package doc), so that a process that lives a fraction of a scrape
// interval is still seen and exported with its final times.
const DefaultSampleInterval = 100 * time.Millisecond

// DefaultExitedKeep is how long an exited task's final series stay
// exported, when Options.ExitedKeep is zero: two scrape intervals at
// Prometheus's default of one minute, so that every scraper (two of an HA
// pair too) sees the final values at least once.
const DefaultExitedKeep = 2 * time.Minute

// DefaultMaxExited bounds the exited tasks kept, when Options.MaxExited is
// zero.
const DefaultMaxExited = 10000

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
	// MaxThreads caps the live threads exported by one scrape: those that
	// used the most CPU since the previous scrape (in the first scrape, the
	// most CPU in all), the others counted in
	// cputime_thread_series_dropped_total. Zero means DefaultMaxThreads;
	// negative means no cap.
	MaxThreads int
	// SampleInterval is how often the tasks are refreshed between scrapes.
	// Zero means: never where the kernel's exit records catch every exit
	// (Linux, CAP_NET_ADMIN), else DefaultSampleInterval; negative means
	// only at scrapes.
	SampleInterval time.Duration
	// ExitedKeep is how long the series of a task that exited stay, with
	// its final values, after its exit was noticed; each is exported by at
	// least one scrape. Zero means DefaultExitedKeep.
	ExitedKeep time.Duration
	// MaxExited bounds the exited tasks kept; the oldest go first,
	// counted in cputime_exited_series_dropped_total. Zero means
	// DefaultMaxExited.
	MaxExited int
	// MaxFiles caps the descriptors the sampler keeps open (see
	// sampler.Options.MaxFiles); zero means the sampler's default.
	MaxFiles int
	// Cgroups adds cputime_process_cgroup_info, each process's cgroup v2
	// path, container id and systemd unit (read when the process is first
	// seen, and again at a scrape after its CPU time moved).
	Cgroups bool
	// NoExitRecords leaves the kernel's exit records unused (tests, and
	// hosts where another listener must not be added).
	NoExitRecords bool
}

// source is what the collector refreshes: a *sampler.Sampler, or a fake in
// tests.
type source interface {
	RefreshInto(*sampler.Sample) error
	Close() error
}

// exitRecord is the final accounting of a process that exited, or (with
// tid set) of one of its threads, from the kernel's exit record.
type exitRecord struct {
	pid          int
	tid          int // a thread other than its process's last: its own record, for unseen threads
	name         string
	creation     time.Time // the record's arrival less the process's elapsed time
	window       time.Duration
	user, kernel time.Duration
	total        time.Duration // exact on-CPU time; user + kernel where the split is known
	split        bool          // user and kernel are known
	exit         time.Time
}

// exitSource delivers the exit records queued since the previous call.
type exitSource interface {
	drain(func(exitRecord)) (dropped uint64, err error)
	Close() error
}

// key names a task: a process has tid 0.
type key struct{ pid, tid int }

// task is one exported process or thread.
type task struct {
	key
	name, start  string // label values
	creation     time.Time
	procCreation time.Time // the process's creation: a thread's process's, a process's own
	user, kernel time.Duration
	threads      int
	lab          *labels
	gen          uint64    // the last refresh that saw it alive
	exit         time.Time // zero while it lives
	expires      time.Time
	cg           *Cgroup // with Options.Cgroups, a process's; nil until read
	cgTotal      time.Duration
	final        bool // its exit record was applied (a later zombie read can still raise it)
	scraped      bool // exported by a scrape
	lastTotal    time.Duration
}

func (t *task) total() time.Duration { return t.user + t.kernel }

// Collector is a prometheus.Collector of the CPU times of processes (and
// optionally their threads). It is safe for concurrent use; concurrent
// scrapes are served one after the other.
type Collector struct {
	opts  Options
	forks func() (uint64, error) // the kernel's count of tasks created since boot; nil: not exported
	src   source
	exits exitSource // nil: no exit records, exits are seen by refreshes
	now   func() time.Time

	mu        sync.Mutex
	s         sampler.Sample
	gen       uint64
	live      map[key]*task
	exited    []*task // in the order their exits were noticed
	exitedBy  map[key][]*task
	lastDrain time.Time
	closed    bool

	// cputime_unseen_tasks_total: with exit records, the tasks whose
	// record names a task that should have had a series and had none;
	// without, the kernel's fork count less the tasks seen appear.
	forkBase, seen, unseen uint64
	forkOK                 bool
	dropped                uint64 // thread series left out by the cap
	exitedDropped          uint64
	recordsDropped         uint64
	notFinal               uint64 // exited processes exported without their final times
	readErrors             uint64
	denied                 []sampler.Task
	refreshErr             error
	errs                   collectErrors

	stop chan struct{}
	done chan struct{}
}

var (
	labelsProcess = []string{"pid", "name", "start"}
	labelsMode    = []string{"pid", "name", "start", "mode"}
	labelsThread  = []string{"pid", "tid", "name", "start"}
	labelsTMode   = []string{"pid", "tid", "name", "start", "mode"}

	descProcessCPU = prometheus.NewDesc("cputime_process_cpu_seconds_total",
		"CPU time of the process in each mode (user, system), exited threads included: the kernel's exact run time in ns divided by 1e9, split by its tick samples. start is the creation time, Unix seconds to the tick, which tells apart two processes that had the same pid.", labelsMode, nil)
	descProcessStart = prometheus.NewDesc("cputime_process_start_time_seconds",
		"Creation time of the process, seconds since the Unix epoch (the kernel's start time in CLOCK_BOOTTIME, not /proc/stat btime).", labelsProcess, nil)
	descProcessThreads = prometheus.NewDesc("cputime_process_threads",
		"Number of live threads of the process.", labelsProcess, nil)
	descProcessExit = prometheus.NewDesc("cputime_process_exit_time_seconds",
		"Exit time of a process that exited, seconds since the Unix epoch; exported with its final CPU time for --exited.keep after its exit was noticed, then its series end.", labelsProcess, nil)
	descThreadCPU = prometheus.NewDesc("cputime_thread_cpu_seconds_total",
		"CPU time of the thread in each mode (user, system): the kernel's exact run time in ns divided by 1e9.", labelsTMode, nil)
	descThreadStart = prometheus.NewDesc("cputime_thread_start_time_seconds",
		"Creation time of the thread, seconds since the Unix epoch.", labelsThread, nil)
	descThreadExit = prometheus.NewDesc("cputime_thread_exit_time_seconds",
		"Exit time of a thread that exited (first seen gone), seconds since the Unix epoch; exported for --exited.keep, with its times as last read.", labelsThread, nil)
	descDropped = prometheus.NewDesc("cputime_thread_series_dropped_total",
		"Thread series left out of scrapes by the cap on threads per scrape (--threads.max), summed over scrapes.", nil, nil)
	descExitedDropped = prometheus.NewDesc("cputime_exited_series_dropped_total",
		"Exited tasks dropped before --exited.keep ran out because more than --exited.max were kept.", nil, nil)
	descRecordsDropped = prometheus.NewDesc("cputime_exit_records_dropped_total",
		"Exit records the kernel dropped because the exporter's queue was full: processes whose final times may be missing.", nil, nil)
	descUnseen = prometheus.NewDesc("cputime_unseen_tasks_total",
		"Tasks the kernel created since the exporter started that came and went without the series they should have had: processes, and threads with --threads (without it a thread's time is in its process's series). With exit records (cputime_exit_records 1) every exit is accounted for by its record, and this counts only the tasks a record shows were missed; a record the kernel dropped is counted in cputime_exit_records_dropped_total instead. Without exit records it is the kernel's fork count (/proc/stat processes) less the tasks seen appear, and without --threads the threads created since the start count too (the kernel's count does not tell them from processes): an upper bound there. Only when every process is watched.", nil, nil)
	descNotFinal = prometheus.NewDesc("cputime_exits_not_final_total",
		"Processes whose exit was noticed without their final times (no exit records: cputime_exit_records 0): reaped by their parent before a refresh read them, so their series end with the times last read, short by what they ran since the last refresh (every --sample-interval).", nil, nil)
	descReadErrors = prometheus.NewDesc("cputime_read_errors_total",
		"Reads of single tasks that failed (a value the kernel could not have produced, access denied); the task is left out of that scrape.", nil, nil)
	descDenied = prometheus.NewDesc("cputime_process_access_denied",
		"1 for each process that exists but whose files the exporter may not read (another user's under hidepid=1, ptrace rules): its other series are absent. count(cputime_process_access_denied) says how many.", []string{"pid"}, nil)
	descDeniedN = prometheus.NewDesc("cputime_processes_access_denied",
		"Number of processes this scrape found but may not read, skipped (see cputime_process_access_denied).", nil, nil)
	descDuration = prometheus.NewDesc("cputime_scrape_duration_seconds",
		"Wall time this scrape took to read the tasks and build the metrics.", nil, nil)
	descExitRecords = prometheus.NewDesc("cputime_exit_records",
		"1 when exits are caught by the kernel's exit records (exact final times, nothing refreshed between scrapes), 0 when by refreshes every --sample-interval.", nil, nil)
)

// New returns a collector for opts. Close it to release what its sampler
// keeps open and stop its background work.
func New(opts Options) (*Collector, error) {
	so := sampler.Options{PIDs: opts.PIDs, Threads: opts.Threads, MaxFiles: opts.MaxFiles}
	if opts.Name != nil {
		so.Match = opts.Name.MatchString
	}
	src, err := sampler.New(so)
	if err != nil {
		return nil, fmt.Errorf("exporter: %w", err)
	}
	var exits exitSource
	if !opts.NoExitRecords {
		exits, _ = openExitRecords() // nil where the kernel will not send them: refreshes instead
	}
	var forks func() (uint64, error)
	if len(opts.PIDs) == 0 && opts.Name == nil {
		forks = kernelForks
	}
	c, err := newCollector(opts, src, exits, forks)
	if err != nil && exits != nil {
		exits.Close()
	}
	return c, err
}

func newCollector(opts Options, src source, exits exitSource, forks func() (uint64, error)) (*Collector, error) {
	if opts.MaxThreads == 0 {
		opts.MaxThreads = DefaultMaxThreads
	}
	if opts.SampleInterval == 0 && exits == nil {
		opts.SampleInterval = DefaultSampleInterval
	}
	if opts.ExitedKeep <= 0 {
		opts.ExitedKeep = DefaultExitedKeep
	}
	if opts.MaxExited <= 0 {
		opts.MaxExited = DefaultMaxExited
	}
	c := &Collector{opts: opts, src: src, exits: exits, forks: forks, now: time.Now, live: make(map[key]*task), exitedBy: make(map[key][]*task), errs: collectErrors{}}
	// The first refresh sets the baseline: what is there already was not
	// "seen appear", and the kernel's fork count starts after it (a task
	// created between the two is then seen appear but not counted as
	// created: the count errs low, never high).
	c.mu.Lock()
	defer c.mu.Unlock()
	if exits != nil {
		exits.drain(func(exitRecord) {}) // exits before the baseline
	}
	c.lastDrain = c.now()
	if err := c.refresh(); err != nil {
		c.closeSources()
		return nil, fmt.Errorf("exporter: %w", err)
	}
	if forks != nil && exits == nil {
		if n, err := forks(); err == nil {
			c.forkBase, c.forkOK = n, true
		}
	}
	c.exited, c.exitedBy = nil, make(map[key][]*task)
	if opts.SampleInterval > 0 || exits != nil {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.background()
	}
	return c, nil
}

// kernelForks reads the number of tasks created since boot.
func kernelForks() (uint64, error) { return forksFrom("/proc/stat") }

// drainInterval is how often the exit records are taken from the kernel's
// queue between scrapes: the queue holds about 10,000 (taskstats), and a
// record's arrival dates the exit, so this bounds how late an exit time is.
const drainInterval = 100 * time.Millisecond

// background refreshes the tasks every SampleInterval, or (with exit
// records and no interval) only takes the exit records from the queue.
func (c *Collector) background() {
	defer close(c.done)
	every := c.opts.SampleInterval
	if every <= 0 {
		every = drainInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			if c.opts.SampleInterval > 0 {
				c.refreshErr = c.refresh()
			} else {
				c.drainExits(c.now())
			}
			c.mu.Unlock()
		}
	}
}

// refresh reads the tasks, then the exit records queued by then: every
// exit the refresh saw has its record queued already (the kernel queues it
// before the parent can reap). c.mu is held.
func (c *Collector) refresh() error {
	if err := c.src.RefreshInto(&c.s); err != nil {
		return err
	}
	c.gen++
	now := c.now()
	for _, e := range c.s.ExitedProcesses {
		c.exitTask(e, key{e.PID, 0}, now)
	}
	for _, e := range c.s.ExitedThreads {
		c.exitTask(e, key{e.PID, e.TID}, now)
	}
	for i := range c.s.Processes {
		c.observe(&c.s.Processes[i], 0)
	}
	for i := range c.s.Threads {
		c.observe(&c.s.Threads[i], c.s.Threads[i].TID)
	}
	for k, t := range c.live {
		if t.gen != c.gen {
			delete(c.live, k) // no longer matched (a rename): its series end
		}
	}
	c.readErrors += uint64(len(c.s.Errors))
	c.denied = append(c.denied[:0], c.s.Denied...)
	c.drainExits(now)
	c.trimExited(now)
	return nil
}

// observe updates (or starts) the series of a live task.
func (c *Collector) observe(s *sampler.Task, tid int) {
	k := key{s.PID, tid}
	t := c.live[k]
	if t == nil || s.New {
		if s.New && (tid == 0 || tid != s.PID) {
			c.seen++ // a new process's main thread is the process, counted already
		}
		t = &task{key: k, creation: s.Times.Creation, procCreation: s.Times.Creation}
		t.start = c.startLabel(k, s.Times.Creation)
		c.live[k] = t
	}
	if tid != 0 {
		// refresh observes the processes before the threads.
		if p := c.live[key{s.PID, 0}]; p != nil {
			t.procCreation = p.creation
		}
	}
	name := LabelValue(s.Name)
	if t.lab == nil || name != t.name {
		t.name = name
		t.lab = t.newLabels()
	}
	t.user, t.kernel = max(t.user, s.Times.User), max(t.kernel, s.Times.Kernel)
	t.threads = s.Threads
	t.gen = c.gen
}

func (t *task) newLabels() *labels {
	tid := ""
	if t.tid != 0 {
		tid = strconv.Itoa(t.tid)
	}
	return newLabels(strconv.Itoa(t.pid), tid, t.name, t.start)
}

var errClosed = errors.New("exporter: collector closed")

// Close stops the background work and releases the sampler's descriptors
// and the exit records' socket. Collect exports nothing after it; closing
// twice is harmless.
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
	err := c.src.Close()
	if c.exits != nil {
		err = errors.Join(err, c.exits.Close())
	}
	return err
}
