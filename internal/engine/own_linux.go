package engine

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// ownThread is what the CurrentThread pseudo-handle keeps of one thread of
// this process that used it: its start time, its tick samples and its
// split's memory, bound to the thread by a thread pidfd (Linux 6.9), else
// by its stat file kept open, so that a thread that reuses the id of one
// that exited never inherits them.
type ownThread struct {
	task
	pidfd    int
	stat     *procfs.File
	ticks    tickCache
	runProof // the thread's last call, read by the thread itself
}

// alive reports whether the thread the entry was made for still runs.
func (o *ownThread) alive() bool {
	if o.pidfd >= 0 {
		s, err := kernel.PidfdState(o.pidfd)
		return err == nil && s == kernel.TaskRunning
	}
	var buf [2048]byte
	n, err := o.stat.ReadAt0(buf[:])
	if err != nil {
		return false
	}
	st, err := procfs.ParseStat(buf[:n])
	return err == nil && st.StartTime == o.start && statState(st, false) == kernel.TaskRunning
}

func (o *ownThread) release() {
	if o.pidfd >= 0 {
		unix.Close(o.pidfd)
	}
	if o.stat != nil {
		o.stat.Close()
	}
}

var ownThreads = struct {
	sync.RWMutex
	m map[int]*ownThread
}{m: make(map[int]*ownThread)}

// ownThreadFor returns a new entry for the calling thread, tid, in place
// of any older one.
func ownThreadFor(tid int) (*ownThread, error) {
	o := &ownThread{pidfd: -1}
	var buf [2048]byte
	st, err := readStat(threadSelfStat, buf[:])
	if err != nil {
		return nil, err
	}
	if o.pidfd, err = openPidfd(tid, true); err != nil {
		return nil, err
	}
	if o.pidfd < 0 {
		if o.stat, err = procfs.OpenFile(string(threadSelfStat)); err != nil {
			return nil, sysError(err)
		}
	}
	o.start, o.kthread, o.split, o.clocks = st.StartTime, false, new(split), account.System
	o.fixCreation()
	ownThreads.Lock()
	defer ownThreads.Unlock()
	if old := ownThreads.m[tid]; old != nil {
		old.release()
	}
	ownThreads.m[tid] = o
	// Forget threads that have exited, once there are many entries.
	if len(ownThreads.m) >= 64 && len(ownThreads.m)&(len(ownThreads.m)-1) == 0 {
		for id, e := range ownThreads.m {
			if id != tid && !e.alive() {
				e.release()
				delete(ownThreads.m, id)
			}
		}
	}
	return o, nil
}

// CurrentThreadTimes serves the CurrentThread pseudo-handle: the calling
// thread's own clocks (id 0), its start time and memory from its entry. An
// entry found in the table is used when its thread is provably the caller
// (its runProof, or its pidfd); otherwise a new one is made for the caller.
func CurrentThreadTimes() (Times, error) {
	tid := gettid()
	ownThreads.RLock()
	o := ownThreads.m[tid]
	ownThreads.RUnlock()
	for fresh := o == nil; ; fresh = true {
		if fresh {
			var err error
			if o, err = ownThreadFor(tid); err != nil {
				return Times{}, err
			}
		}
		s, e := o.ticks.sample(threadClock(0, 0))
		if e != 0 {
			return Times{}, clockError("thread", e)
		}
		after := o.clocks.Mono()
		if fresh || o.proves(s.RTime, after, false) || o.alive() {
			o.saw(s.RTime, after)
			return o.result(s)
		}
	}
}

// ThreadSample reads the calling thread's CPU clocks.
func ThreadSample() (cpuSample, error) {
	s, e := sampleClocks(threadClock(0, 0))
	if e != 0 {
		return cpuSample{}, clockError("thread", e)
	}
	return s, nil
}
