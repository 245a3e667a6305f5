package sampler

import (
	"errors"
	"fmt"
	"time"

	"github.com/cputime/cputime"
)

// Options selects what a Sampler watches. The zero Options watches every
// process, without their threads, within the default descriptor budget.
type Options struct {
	// PIDs, if not empty, limits the sampler to these processes. A listed
	// process that does not exist (yet, or any more) is simply absent from
	// the samples; a new process that reuses one of these ids is a new
	// task, reported as new.
	PIDs []int

	// Match, if set, keeps only the processes whose name (Linux: comm, at
	// most 15 bytes; Windows: image name) it accepts, and their threads.
	// It is asked again whenever a process's name changes (an exec), so a
	// process that execs into a matching program appears then. It must not
	// block and must give the same answer for the same name.
	Match func(name string) bool

	// Threads adds each thread of the watched processes to the samples
	// (Sample.Threads, Sample.ExitedThreads).
	Threads bool

	// MaxFiles caps the file descriptors the sampler keeps open between
	// refreshes. Zero means a budget derived from RLIMIT_NOFILE: the soft
	// limit is raised to the hard limit (as Go's os package does at init),
	// and the sampler takes at most three quarters of it, leaving the rest
	// (at least 128) to the caller. The budget is never exceeded: beyond it
	// tasks are read by opening their files for each read, which costs more
	// system calls but is never an error. Ignored on Windows.
	MaxFiles int
}

// ErrClosed is returned by Refresh after Close.
var ErrClosed = errors.New("sampler closed")

// Sampler refreshes the times of a set of processes (and their threads)
// again and again, at the cost of about one read per task whose times have
// not changed. It is not safe for concurrent use: callers that refresh from
// several goroutines (a Prometheus collector) serialize the calls.
type Sampler struct {
	opts   Options
	sys    sys
	closed bool
	prev   time.Time
	n      int // refreshes done
}

// New returns a sampler for opts. It reads nothing yet: the first Refresh
// opens what it keeps.
func New(opts Options) (*Sampler, error) { return newSampler(opts, sys{}) }

// newSampler is New with sys, the platform's part, before its init.
func newSampler(opts Options, sys sys) (*Sampler, error) {
	for _, pid := range opts.PIDs {
		if pid <= 0 {
			return nil, fmt.Errorf("sampler: process id %d: %w", pid, cputime.ErrInvalidArgument)
		}
	}
	if opts.MaxFiles < 0 {
		return nil, fmt.Errorf("sampler: MaxFiles %d: %w", opts.MaxFiles, cputime.ErrInvalidArgument)
	}
	s := &Sampler{opts: opts, sys: sys}
	if err := s.sys.init(&s.opts); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	attachCleanup(s)
	return s, nil
}

// Refresh reads every watched task and returns what changed since the
// previous refresh. It fails only when nothing could be read at all (/proc
// missing, the sampler closed); what fails for one task is in
// Sample.Errors.
func (s *Sampler) Refresh() (*Sample, error) {
	dst := new(Sample)
	if err := s.RefreshInto(dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// RefreshInto is Refresh into dst, reusing its slices' storage: a caller
// that refreshes thousands of tasks every second allocates nothing per task
// once the slices have grown. The previous contents of dst are lost.
func (s *Sampler) RefreshInto(dst *Sample) error {
	if s.closed {
		return ErrClosed
	}
	now := time.Now()
	*dst = Sample{
		Time:            now,
		First:           s.n == 0,
		Processes:       dst.Processes[:0],
		Threads:         dst.Threads[:0],
		ExitedProcesses: dst.ExitedProcesses[:0],
		ExitedThreads:   dst.ExitedThreads[:0],
		Denied:          dst.Denied[:0],
		Errors:          dst.Errors[:0],
	}
	if s.n > 0 {
		dst.Interval = now.Sub(s.prev)
	}
	if err := s.sys.refresh(dst); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	s.prev = now
	s.n++
	return nil
}

// Stats returns the sampler's resources and the cost of its last refresh.
func (s *Sampler) Stats() Stats { return s.sys.stats() }

// Close releases every descriptor the sampler holds. Refresh fails after
// it; closing twice is harmless. A Sampler dropped without Close releases
// its descriptors when the garbage collector finds it.
func (s *Sampler) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.sys.close()
}
