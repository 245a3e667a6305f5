package recorder

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/taskstats"
)

// exitSource is the kernel's taskstats record of each task's exit, where
// the recorder may listen (CAP_NET_ADMIN in the initial namespaces): each
// task's sum_exec_runtime as do_exit leaves it, the very clock the task's
// own CPU-time reads and wait4 use, and its tick-sampled user and kernel
// time, the kernel's own evidence for the split. perf's task-clock, the
// source without it, counts time the scheduler's clock leaves out (time
// the hypervisor stole, interrupts) and misses the instants of each
// switch: seen here, 2-ms threads up to 0.4 ms below and 7 ms above their
// own clocks on a VM whose host was busy, where taskstats agreed with
// every thread's own final reading to the nanosecond.
//
// A goroutine receives every exit on the machine and hands each thread's
// record to the recording goroutine, which keeps those of the tree; at the
// end the recording goroutine drains what is left itself.
type exitSource struct {
	l      *taskstats.Listener
	cancel context.CancelFunc
	done   chan struct{}

	tid     atomic.Int32 // the receiving thread, niced
	mu      sync.Mutex
	recs    []*exitRecord // received, not yet taken (take)
	batch   []*exitRecord // drain's, before they are handed over
	slab    []exitRecord  // the records, allocated 256 at a time
	dropped uint64        // records the kernel dropped (the socket's queue full)
	err     error         // why receiving stopped, if it did
}

// perfOnly makes the recordings count with perf alone (tests).
var perfOnly bool

var errPerfOnly = errors.New("taskstats turned off")

type exitRecord struct {
	taskstats.Stats
	received time.Time
}

// openExits starts listening for exits, or says why it cannot: then the
// recording counts the tasks with perf alone.
func openExits() (*exitSource, error) {
	if perfOnly {
		return nil, errPerfOnly
	}
	l, err := taskstats.Listen(taskstats.Options{Unpolled: true, ReceiveBuffer: 128 << 20})
	if err != nil {
		return nil, err
	}
	// sum_exec_runtime is in the record only with CONFIG_TASK_DELAY_ACCT.
	var q taskstats.Record
	for range 3 { // a query can fail while the machine is busy (seen once)
		if q, err = taskstats.Query(taskstats.Thread, unix.Gettid()); err == nil {
			break
		}
	}
	if err != nil || q.CPURunVirtualTotal == 0 {
		l.Close()
		if err == nil {
			err = errors.New("taskstats records carry no sum_exec_runtime (CONFIG_TASK_DELAY_ACCT)")
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &exitSource{l: l, cancel: cancel, done: make(chan struct{})}
	go s.receive(ctx)
	return s, nil
}

// drainEvery is how often the receiving goroutine takes the exit records
// queued since (the socket holds 128 MiB of them):
// waking at each exit on the machine would cost each exit a
// wakeup of this process, on the CPUs the recorded work runs on.
const drainEvery = 100 * time.Millisecond

func (s *exitSource) receive(ctx context.Context) {
	defer close(s.done)
	runtime.LockOSThread() // never unlocked: the thread, niced, ends with the goroutine
	s.tid.Store(lowPriority())
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for s.drain() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// drain receives the records queued now and hands them over (take). It
// returns false once receiving failed (state says why), and receives
// nothing more after that. One goroutine at a time: the receiving one, or
// after stopReceiving the recording's.
func (s *exitSource) drain() bool {
	if _, err := s.state(); err != nil {
		return false
	}
	var dropped uint64
	err := s.l.Drain(func(b taskstats.Batch) {
		dropped += b.Dropped
		for i := range b.Records {
			if r := &b.Records[i]; r.Kind == taskstats.Thread {
				if len(s.slab) == cap(s.slab) {
					s.slab = make([]exitRecord, 0, 256)
				}
				s.slab = append(s.slab, exitRecord{Stats: r.Stats, received: b.Received})
				s.batch = append(s.batch, &s.slab[len(s.slab)-1])
			}
		}
	})
	if err != nil && !errors.Is(err, taskstats.ErrMalformed) {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return false
	}
	// The queue is empty: hand over what came.
	if len(s.batch) > 0 || dropped > 0 {
		s.mu.Lock()
		s.recs = append(s.recs, s.batch...)
		s.dropped += dropped
		s.mu.Unlock()
		clear(s.batch)
		s.batch = s.batch[:0]
	}
	return true
}

// stopReceiving ends the receiving goroutine, for the end of a recording:
// there the recording's goroutine drains the socket itself (drain), with
// no goroutine to wake and wait for at each look.
func (s *exitSource) stopReceiving() {
	s.cancel()
	<-s.done
}

// hurry gives the receiving thread full priority for the end of a
// recording, if it still runs.
func (s *exitSource) hurry() {
	select {
	case <-s.done:
	default:
		fullPriority(s.tid.Load())
	}
}

// take returns the records received since the last take.
func (s *exitSource) take(into []*exitRecord) []*exitRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	into = append(into[:0], s.recs...)
	clear(s.recs)
	s.recs = s.recs[:0]
	return into
}

// state returns the records dropped so far and why receiving stopped.
func (s *exitSource) state() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped, s.err
}

func (s *exitSource) close() {
	s.cancel()
	<-s.done
	s.l.Close()
}

// stealTicks is the time the hypervisor took from this machine's CPUs so
// far (/proc/stat, the cpu line's steal field, USER_HZ ticks); 0 where it
// cannot be read.
func stealTicks() uint64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0
	}
	v, err := strconv.ParseUint(string(f[8]), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every
// architecture Go runs Linux on.
const clockTicks = 100
