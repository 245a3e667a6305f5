package exporter

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Point is one task's values as of a refresh, for outputs other than
// Prometheus (the OTLP push): the same tasks, identity and values as the
// scrape's series.
type Point struct {
	PID  int    // process id
	TID  int    // thread id; 0 for a process
	Name string // as a label value (LabelValue)
	// Start is the start label: creation in Unix seconds to the tick, with
	// a suffix where two tasks with this id started in the same tick.
	Start    string
	Creation time.Time // the task's: a thread's own
	// ProcessCreation is the creation time of the task's process: a
	// process's Creation, and for a thread its process's, the one value
	// every point of a process carries.
	ProcessCreation time.Time
	User, Kernel    time.Duration
	Threads         int       // live threads of a process
	Exit            time.Time // zero while the task lives
}

// Points refreshes the tasks and calls fn with each one a scrape would
// export: the live processes, the threads (at most Options.MaxThreads,
// those with the most CPU), and the tasks that exited within
// Options.ExitedKeep. fn must not call the Collector.
func (c *Collector) Points(fn func(Point)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	if err := c.refresh(); err != nil {
		return fmt.Errorf("refreshing tasks: %w", err)
	}
	var threads []*task
	point := func(t *task) {
		fn(Point{PID: t.pid, TID: t.tid, Name: t.name, Start: t.start, Creation: t.creation,
			ProcessCreation: t.procCreation, User: t.user, Kernel: t.kernel, Threads: t.threads, Exit: t.exit})
		t.scraped = true
	}
	for _, t := range c.live {
		if t.tid == 0 {
			point(t)
		} else {
			threads = append(threads, t)
		}
	}
	if n := c.opts.MaxThreads; n >= 0 && len(threads) > n {
		slices.SortFunc(threads, func(a, b *task) int { return cmp.Or(cmp.Compare(b.total(), a.total()), cmp.Compare(a.tid, b.tid)) })
		threads = threads[:n]
	}
	for _, t := range threads {
		point(t)
	}
	for _, t := range c.exited {
		if t.tid == 0 || t.scraped {
			point(t)
		}
	}
	return nil
}
