package recorder

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
	"github.com/cputime/cputime/internal/taskstats"
)

// exitSource is the kernel's taskstats record of each task's exit, where
// the recorder may listen (CAP_NET_ADMIN in the initial namespaces): each
// task's sum_exec_runtime as do_exit leaves it, the very clock the task's
// own CPU-time reads and wait4 use, and its tick-sampled user and kernel
// time, the kernel's own evidence for the split. perf's task-clock, the
// source without it, counts time the scheduler's clock leaves out (time
// the hypervisor stole, interrupts) and misses the instants of each
// switch, so on a VM whose host is busy it strays from the threads' own
// clocks both ways, where taskstats agrees with every thread's own final
// reading to the nanosecond (docs/figures.md).
//
// The recording goroutine receives every exit on the machine at each of
// its rounds (the socket holds 128 MiB of records meanwhile) and keeps
// those of the tree; Stop, taking the recording over, drains what is left.
// A goroutine of its own, woken on a timer on a thread of its own, would
// cost a wakeup and a thread more and leave up to a period of records
// for the end of each run, while the user waits; and with one P (run),
// ending it would mean handing the P to its locked thread and waking that
// thread.
// Owned by the goroutine that holds Recorder.owner.
type exitSource struct {
	l       *taskstats.Listener
	recs    []*exitRecord // received, not yet taken (take)
	slab    []exitRecord  // the records, allocated 256 at a time
	dropped uint64        // records the kernel dropped (the socket's queue full)
	err     error         // why receiving stopped, if it did
}

var errPerfOnly = errors.New("taskstats turned off")

// exitRecord is what the recording keeps of a task's taskstats record:
// 72 bytes, where the whole record with its arrival took 208 (5,000
// threads: 0.7 MB less, which the process's exit would otherwise spend
// time tearing down: see docs/commands.md).
type exitRecord struct {
	PID, PPID, TGID uint32
	KThread         bool   // a kernel thread's (taskstats.Times)
	UTime, STime    uint64 // µs, tick-sampled
	Total           uint64 // sum_exec_runtime, ns (openExits insists on it)
	received        time.Time
	next            *exitRecord // the next waiting for a task of the same id (Recorder.waiting)
}

// openExits starts listening for exits, or says why it cannot: then the
// recording counts the tasks with perf alone. With perfOnly (a test's:
// testHooks) it does not try.
func openExits(perfOnly bool) (*exitSource, error) {
	if perfOnly {
		return nil, errPerfOnly
	}
	l, err := taskstats.Listen(taskstats.Options{Unpolled: true, ReceiveBuffer: 128 << 20})
	if err != nil {
		return nil, err
	}
	// sum_exec_runtime is in the record only with CONFIG_TASK_DELAY_ACCT.
	var q taskstats.Record
	for range 3 { // a query can fail while the machine is busy
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
	return &exitSource{l: l}, nil
}

// drain receives the records queued now (take returns them). After an
// error it receives nothing more (state says why).
func (s *exitSource) drain() {
	if s.err != nil {
		return
	}
	err := s.l.Drain(func(b taskstats.Batch) {
		s.dropped += b.Dropped
		for i := range b.Records {
			if r := &b.Records[i]; r.Kind == taskstats.Thread {
				if len(s.slab) == cap(s.slab) {
					s.slab = make([]exitRecord, 0, 256)
				}
				t := r.Times()
				s.slab = append(s.slab, exitRecord{PID: r.PID, PPID: r.PPID, TGID: r.TGID, KThread: t.KThread,
					UTime: t.UTime, STime: t.STime, Total: t.Total, received: b.Received})
				s.recs = append(s.recs, &s.slab[len(s.slab)-1])
			}
		}
	})
	if err != nil && !errors.Is(err, taskstats.ErrMalformed) {
		s.err = err
	}
}

// take returns the records received since the last take.
func (s *exitSource) take(into []*exitRecord) []*exitRecord {
	into = append(into[:0], s.recs...)
	clear(s.recs)
	s.recs = s.recs[:0]
	return into
}

// state returns the records dropped so far and why receiving stopped.
func (s *exitSource) state() (uint64, error) { return s.dropped, s.err }

func (s *exitSource) close() { s.l.Close() }

// stealTicks is the time the hypervisor took from this machine's CPUs so
// far (/proc/stat, the cpu line's steal field, USER_HZ ticks); 0 where it
// cannot be read.
func stealTicks() uint64 {
	s, err := procfs.NewFS("").ReadSysStat()
	if err != nil {
		return 0
	}
	return s.Total.Steal
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every
// architecture Go runs Linux on.
const clockTicks = 100
