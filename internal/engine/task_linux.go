package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/procfs"
)

var threadSelfStat = []byte(sysProc.Path("thread-self", "stat"))

var selfPID = os.Getpid()

// haveSchedstat reports whether the kernel has per-task schedstat files
// (CONFIG_SCHED_INFO; every major distribution's kernel does). Without them,
// threads of other processes fall back to their stat file's tick counts:
// whole USER_HZ ticks, like every other library's.
var haveSchedstat = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/schedstat") // the kernel's, whatever an Engine's root
	return err == nil
})

// schedstat reports whether the Engine reads schedstat files.
func (eng *Engine) schedstat() bool { return eng.useSchedstat && haveSchedstat() }

// ticksToNanos converts USER_HZ clock ticks to nanoseconds.
func ticksToNanos(ticks uint64) uint64 { return account.TicksToNanos(ticks) }

func getpid() int { return selfPID }

func gettid() int { return unix.Gettid() }

// sysError maps an error of the kernel's interfaces onto the package's
// sentinels, keeping the original in the chain.
func sysError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH), errors.Is(err, syscall.EINVAL):
		return &kindError{ErrNotFound, err}
	case errors.Is(err, fs.ErrPermission):
		return &kindError{ErrAccessDenied, err}
	case errors.Is(err, procfs.ErrFileParse), errors.Is(err, io.ErrShortBuffer):
		// Malformed, or larger than any such file can be.
		return &kindError{ErrInvalidData, err}
	}
	return err
}

// clockError is sysError for a failed clock read of the task.
func clockError(what string, e unix.Errno) error {
	return sysError(fmt.Errorf("reading %s CPU clock: %w", what, e))
}

// task is what a handle learns about its task when it opens it.
type task struct {
	start   uint64 // start time, USER_HZ ticks since boot
	kthread bool   // a kernel thread: all its time is kernel time
	process bool   // a whole process (its threads run on many CPUs at once; exited means every thread has)
	// split, if set, is the reader's own memory of the split, which keeps
	// both parts from going backwards (a handle's, bound to its task); nil
	// for a one-shot read, which applies splitRule afresh.
	split *split
	// opened is set when a handle opened the task: its start time was
	// read then, and is not checked again.
	opened bool
	// clocks date the start and check the run time.
	clocks *account.Clocks
	// limit is the most run time CheckRuntime allowed at the handle's last
	// reading of the clocks (account.Clock.RuntimeLimit): a run time below
	// it passes without reading them again.
	limit atomic.Uint64
}

// fixCreation marks the task a handle's.
func (t *task) fixCreation() { t.opened = true }

// creationAt dates the start with offset, the boot offset of the query:
// every path dates every task with the offset current when it answers, so
// that a handle, a one-shot, the sampler and another process agree, before
// and after a clock step (which moves them all by the step).
func (t *task) creationAt(offset int64) time.Time {
	return account.Creation(t.start, offset)
}

// times turns a sample of the task's CPU clocks or files into Times, with
// offset the CLOCK_REALTIME − CLOCK_BOOTTIME to date the start with. Values
// the kernel could not have produced are an error for this read, and never
// reach the split's memory.
func (t *task) times(s cpuSample, c account.Clock) (Times, error) {
	s.KThread = t.kthread
	if err := t.check(s, c); err != nil {
		return Times{}, err
	}
	return t.splitChecked(s, c.Offset), nil
}

// splitChecked turns a checked sample into Times, with offset to date an unfixed
// creation.
func (t *task) splitChecked(s cpuSample, offset int64) Times {
	var user, kernel uint64
	if t.split != nil {
		user, kernel = t.split.Adjust(s)
	} else {
		user, kernel = splitRule(s)
	}
	return Times{
		Creation: t.creationAt(offset),
		User:     time.Duration(user),
		Kernel:   time.Duration(kernel),
	}
}

// check refuses a sample or start time the kernel could not have produced.
func (t *task) check(s cpuSample, c account.Clock) error {
	if !t.opened { // else checked when the handle opened it
		if err := c.CheckStart(t.start); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidData, err)
		}
	}
	if err := account.CheckTicks(s); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	if err := c.CheckRuntime(s.RTime, t.start, t.process); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	return nil
}

// result is times for a query of one task: the offset read now. A handle
// whose task has not run since its last read answers from its memory: the
// same answer, without the clock readings and checks a new total needs.
func (t *task) result(s cpuSample) (Times, error) {
	if t.split == nil || !t.opened {
		return t.times(s, t.clocks.Now())
	}
	if user, kernel, ok := t.split.Covers(s.RTime); ok {
		return Times{Creation: t.creationAt(t.clocks.KeptOffset()), User: time.Duration(user), Kernel: time.Duration(kernel)}, nil
	}
	if s.RTime <= t.limit.Load() {
		// Allowed at the last reading of the clocks, so allowed now: a
		// running thread reads them about once per 20 ms of its CPU time.
		s.KThread = t.kthread
		if err := account.CheckTicks(s); err != nil {
			return Times{}, fmt.Errorf("%w: %w", ErrInvalidData, err)
		}
		return t.splitChecked(s, t.clocks.KeptOffset()), nil
	}
	c := t.clocks.Now()
	t.limit.Store(c.RuntimeLimit(t.start, t.process))
	return t.times(s, c)
}

// lastKnown is the last times reported for the task: what a handle reports
// when its task has gone before its final accounting could be read.
func (t *task) lastKnown() Times {
	user, kernel := t.split.Last()
	return Times{Creation: t.creationAt(t.clocks.BootOffset()), User: time.Duration(user), Kernel: time.Duration(kernel)}
}

// readStat reads and parses a stat file; the Stat's Comm aliases buf.
// path is built in a small buffer of the caller's: no allocation.
func readStat(path []byte, buf []byte) (procfs.Stat, error) {
	n, err := procfs.ReadFileAt(unix.AT_FDCWD, path, buf)
	if err != nil {
		return procfs.Stat{}, sysError(fmt.Errorf("reading %s: %w", string(path), err))
	}
	return procfs.ParseStat(buf[:n])
}

// procPath returns root/id/file in dst's storage, root the Engine's.
func (eng *Engine) procPath(dst []byte, id int, file string) []byte {
	return procPath(eng.proc.Root(), dst, id, file)
}

// procPath returns root/id/file in dst's storage.
func procPath(root string, dst []byte, id int, file string) []byte {
	dst = append(dst[:0], root...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(id), 10)
	return append(append(dst, '/'), file...)
}

// self is the task record of the calling process, read once.
var self = sync.OnceValues(func() (*task, error) {
	st, err := sysProc.ReadStat(selfPID)
	if err != nil {
		return nil, sysError(err)
	}
	// The calling process is the one task whose identity cannot change
	// under us: one memory of its split serves every read of it.
	t := &task{start: st.StartTime, process: true, split: new(split), clocks: account.System}
	t.fixCreation()
	return t, nil
})

// selfTicks caches the calling process's tick samples (tickcache_linux.go).
var selfTicks tickCache

// CurrentProcessTimes serves the CurrentProcess pseudo-handle, with the
// same evidence as every other process's reader: its own CPU clocks.
func CurrentProcessTimes() (Times, error) {
	t, err := self()
	if err != nil {
		return Times{}, err
	}
	s, e := selfTicks.sample(processClock(0, 0))
	if e != 0 {
		return Times{}, clockError("process", e)
	}
	return t.result(s)
}
