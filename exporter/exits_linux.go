package exporter

import (
	"time"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/taskstats"
)

// taskstatsExits takes the kernel's exit records (taskstats, CAP_NET_ADMIN)
// from a socket kept out of the Go poller: it is drained every
// drainInterval, so no thread of the exporter wakes at each exit on the
// machine.
type taskstatsExits struct {
	l *taskstats.Listener
	// The thread records' tick samples per process, for a process record
	// that carries none (kernels whose TGID record holds only the delay
	// accounting fields).
	ticks map[uint32][2]uint64
}

// CheckExitRecords reports whether the kernel's exit records can be had
// here (taskstats: CAP_NET_ADMIN in the initial user and pid namespaces),
// and if not, why: a Collector then catches exits by refreshing.
func CheckExitRecords() error { return taskstats.Check() }

func openExitRecords() (exitSource, error) {
	if err := taskstats.Check(); err != nil {
		return nil, err
	}
	l, err := taskstats.Listen(taskstats.Options{Unpolled: true})
	if err != nil {
		return nil, err
	}
	return &taskstatsExits{l: l, ticks: make(map[uint32][2]uint64)}, nil
}

func (x *taskstatsExits) Close() error { return x.l.Close() }

// drain passes the final accounting of each process whose last thread
// exited since the previous drain.
func (x *taskstatsExits) drain(fn func(exitRecord)) (dropped uint64, err error) {
	err = x.l.Drain(func(b taskstats.Batch) {
		dropped += b.Dropped
		x.batch(b, fn)
	})
	return dropped, err
}

// batch turns one message into process records: a process record (sent
// with its last thread's record, for a process that ever had several
// threads) takes the name and elapsed time of that thread's record; a
// thread record flagged as its group's last, without a process record, is
// a single-threaded process. The record of any other thread but the
// main one is passed as a thread's (tid set).
func (x *taskstatsExits) batch(b taskstats.Batch, fn func(exitRecord)) {
	var last *taskstats.Record
	hasProcess := false
	for i := range b.Records {
		r := &b.Records[i]
		switch r.Kind {
		case taskstats.Thread:
			last = r
			tgid := r.TGID
			if tgid == 0 {
				tgid = r.ID
			}
			if r.Flag&taskstats.AGROUP == 0 {
				t := x.ticks[tgid]
				x.ticks[tgid] = [2]uint64{t[0] + r.UTime, t[1] + r.STime}
			}
		case taskstats.Process:
			hasProcess = true
		}
	}
	for i := range b.Records {
		r := &b.Records[i]
		switch {
		case r.Kind == taskstats.Process && last != nil:
			s := r.Stats
			t := x.ticks[r.ID]
			delete(x.ticks, r.ID)
			if s.UTime == 0 && s.STime == 0 {
				s.UTime, s.STime = t[0]+last.UTime, t[1]+last.STime
			}
			elapsed := last.TGETime
			if elapsed == 0 {
				elapsed = last.ETime
			}
			fn(record(int(r.ID), last.Comm, s, elapsed, b.Received))
		case r.Kind == taskstats.Thread && !hasProcess && r.Flag&taskstats.AGROUP != 0:
			pid := r.TGID
			if pid == 0 {
				pid = r.ID
			}
			delete(x.ticks, pid)
			fn(record(int(pid), r.Comm, r.Stats, r.ETime, b.Received))
		case r.Kind == taskstats.Thread && r.TGID != 0 && r.ID != r.TGID:
			t := record(int(r.TGID), r.Comm, r.Stats, r.ETime, b.Received)
			t.tid = int(r.ID)
			fn(t)
		}
	}
}

func record(pid int, name string, s taskstats.Stats, elapsedUs uint64, received time.Time) exitRecord {
	r := exitRecord{pid: pid, name: name, exit: received, creation: received.Add(-time.Duration(elapsedUs) * time.Microsecond)}
	t := s.Times()
	r.total = time.Duration(t.Total)
	if t.Sampled() {
		u, k := account.Rule(account.Evidence{UTime: t.UTime, STime: t.STime, RTime: t.Total, KThread: t.KThread})
		r.user, r.kernel, r.split = time.Duration(u), time.Duration(k), true
	}
	return r
}
