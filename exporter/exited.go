package exporter

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cputime/cputime/sampler"
)

// startLabel is the start label of a new task: its creation time in Unix
// seconds to the hundredth (the kernel's tick, USER_HZ 100), made unique
// among the series kept for the same id with a suffix where two tasks
// started in the same tick.
func (c *Collector) startLabel(k key, creation time.Time) string {
	ms := creation.UnixMilli()
	base := strconv.FormatInt(ms/1000, 10) + "." + fmt.Sprintf("%02d", (ms%1000)/10)
	label := base
	for n := 1; c.labelUsed(k, label); n++ {
		label = base + "_" + strconv.Itoa(n)
	}
	return label
}

func (c *Collector) labelUsed(k key, label string) bool {
	if t := c.live[k]; t != nil && t.start == label {
		return true
	}
	for _, t := range c.exitedBy[k] {
		if t.start == label {
			return true
		}
	}
	return false
}

// exitTask moves a task the sampler reports exited to the exited ones.
func (c *Collector) exitTask(e sampler.Exited, k key, now time.Time) {
	if t := c.live[k]; t != nil && t.creation.Equal(e.Times.Creation) {
		delete(c.live, k)
		t.exit = e.GoneAt
		c.keepExited(t, now)
	}
	var t *task
	for _, x := range c.exitedBy[k] {
		if x.creation.Equal(e.Times.Creation) {
			t = x
		}
	}
	if t == nil {
		return // never exported (left out by the filter or the thread cap)
	}
	if k.tid == 0 && !e.Final && c.exits == nil {
		c.notFinal++ // no exit record will come: its series ends short
	}
	// Every figure for t reads one clock that only goes forward, none
	// above the process's final total: the sampler's reads (of a zombie:
	// its final times, but for its last thread's run since its last
	// tick, if it is still on a CPU) and the kernel's exit record, which
	// the last thread sends before the address-space teardown
	// (milliseconds for a large process). The larger total is the later,
	// so it is kept whichever came first: an exit record drained between
	// the sampler's last read of the live process and its read of the
	// zombie would otherwise leave the teardown out, and a child's final
	// CPU would read below its wait4 rusage.
	t.raise(e.Times.User+e.Times.Kernel, e.Times.User)
	if !t.final && !e.Times.Exit.IsZero() {
		t.exit = e.Times.Exit
	}
}

// raise sets t's times to total, split with user as the user part as far
// as neither mode goes below what was exported (the sampler's split kept
// both from going back) and the two add up to total: the kernel's own
// cputime_adjust rule. A total not above t's changes nothing.
func (t *task) raise(total, user time.Duration) {
	if total <= t.total() {
		return
	}
	u := min(max(user, t.user), total-t.kernel)
	t.user, t.kernel = u, total-u
}

// keepExited adds t to the exited tasks, its exit noticed now.
func (c *Collector) keepExited(t *task, now time.Time) {
	t.expires = now.Add(c.opts.ExitedKeep)
	if t.exit.IsZero() {
		t.exit = now
	}
	c.exited = append(c.exited, t)
	c.exitedBy[t.key] = append(c.exitedBy[t.key], t)
}

// drainExits takes the exit records queued since the previous drain.
func (c *Collector) drainExits(now time.Time) {
	if c.exits == nil {
		return
	}
	since := c.lastDrain
	c.lastDrain = now
	n, _ := c.exits.drain(func(r exitRecord) {
		if r.window == 0 { // the fake sources of tests set it
			r.window = max(r.exit.Sub(since), 0) + 20*time.Millisecond
		}
		if r.tid != 0 {
			c.threadGone(r)
		} else {
			c.final(r, now)
		}
	})
	c.recordsDropped += n
}

// matches reports whether the task creation could be the one of an exit
// record dated cr: the record's creation is its arrival less the task's
// elapsed time, so it is late by the delivery delay (at most the time
// since the previous drain, r.window), and the sampler's creation is the
// start of the kernel's tick, up to 10 ms early.
func matches(creation time.Time, r exitRecord) bool {
	return !creation.After(r.creation.Add(20*time.Millisecond)) && !creation.Before(r.creation.Add(-r.window-10*time.Millisecond))
}

// final applies a process's exit record: its final times go to the series
// of the task it ends (live, or already seen exited), or to a series of
// its own for a process that came and went between two refreshes.
func (c *Collector) final(r exitRecord, now time.Time) {
	if !c.wanted(r) {
		return
	}
	k := key{r.pid, 0}
	var t *task
	for _, x := range c.exitedBy[k] {
		if !x.final && matches(x.creation, r) {
			t = x
		}
	}
	if live := c.live[k]; t == nil && live != nil && matches(live.creation, r) {
		t = live
		delete(c.live, k)
		t.exit = r.exit
		c.keepExited(t, now)
	}
	if t == nil {
		c.seen++
		ms := r.creation.UnixMilli()
		t = &task{key: k, creation: time.UnixMilli(ms - ms%10), name: LabelValue(r.name)}
		t.procCreation = t.creation
		t.start = c.startLabel(k, t.creation)
		t.lab = t.newLabels()
		t.exit = r.exit
		c.keepExited(t, now)
	}
	// A record short of the last read (it is exact as of the last tick or
	// switch before the teardown, the read may be later) leaves the last
	// read; a zombie read after it may still raise it (exitTask).
	if tot := r.total; tot > t.total() {
		u := r.user
		if !r.split {
			u = tot // no tick samples in the record: the split last read
			if last := t.total(); last > 0 {
				u = time.Duration(float64(tot) * float64(t.user) / float64(last))
			}
		}
		t.raise(tot, u)
	}
	t.final = true
	t.exit = r.exit
}

// threadGone takes a thread's exit record: with Options.Threads, every
// thread should have a series, and one that came and went between two
// refreshes had none (its time is in its process's). Without, a thread
// is never missed.
func (c *Collector) threadGone(r exitRecord) {
	if !c.opts.Threads || c.forks == nil {
		return
	}
	k := key{r.pid, r.tid}
	if t := c.live[k]; t != nil && matches(t.creation, r) {
		return
	}
	for _, x := range c.exitedBy[k] {
		if matches(x.creation, r) {
			return
		}
	}
	c.unseen++
}

// wanted applies the PIDs and Name options to an exit record.
func (c *Collector) wanted(r exitRecord) bool {
	if len(c.opts.PIDs) > 0 && !slices.Contains(c.opts.PIDs, r.pid) {
		return false
	}
	return c.opts.Name == nil || c.opts.Name.MatchString(r.name)
}

// trimExited drops the exited tasks whose time is up and that a scrape
// exported, and the oldest beyond MaxExited.
func (c *Collector) trimExited(now time.Time) {
	over := len(c.exited) - c.opts.MaxExited
	kept := c.exited[:0]
	for _, t := range c.exited {
		switch {
		case over > 0:
			over--
			c.exitedDropped++
		case t.scraped && now.After(t.expires):
		default:
			kept = append(kept, t)
			continue
		}
		c.forget(t)
	}
	clear(c.exited[len(kept):])
	c.exited = kept
}

func (c *Collector) forget(t *task) {
	l := slices.DeleteFunc(c.exitedBy[t.key], func(x *task) bool { return x == t })
	if len(l) == 0 {
		delete(c.exitedBy, t.key)
	} else {
		c.exitedBy[t.key] = l
	}
}
