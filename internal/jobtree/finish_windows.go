package jobtree

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// Finish ends the watch, once the command has exited, and returns what
// the job saw. Processes that join the job after Finish are not in the
// record (their times are in the totals if they joined before the
// accounting was read). Calling it again returns the same Result.
func (t *Tree) Finish() Result {
	t.finishOnce.Do(func() { t.result = t.finish() })
	return t.result
}

func (t *Tree) finish() Result {
	var r Result
	// The port is first in, first out: every NEW_PROCESS posted before
	// this packet is handled before the monitor sees it.
	if err := windows.PostQueuedCompletionStatus(t.port, 0, stopKey, nil); err == nil {
		<-t.monitorDone
	} else {
		r.Note = fmt.Sprintf("the job's messages could not be stopped (%v): the record may lack the last processes", err)
	}
	if t.sampleStop != nil {
		close(t.sampleStop)
		<-t.sampleDone
	}
	var acct winapi.JOBOBJECT_BASIC_ACCOUNTING_INFORMATION
	acctErr := windows.QueryInformationJobObject(t.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil)
	r.Joined = int(acct.TotalProcesses)

	t.mu.Lock()
	defer t.mu.Unlock()
	r.Missed = append([]int(nil), t.missed...)
	var sum time.Duration
	var sumUser, sumKernel time.Duration
	sampled := false
	for _, p := range t.procs {
		p.identify()
		q := Process{ID: p.id, Parent: p.parent, Name: p.name, Creation: p.creation}
		var c, e, k, u windows.Filetime
		if err := windows.GetProcessTimes(p.h, &c, &e, &k, &u); err == nil {
			if e != (windows.Filetime{}) {
				q.Exit = time.Unix(0, e.Nanoseconds())
			}
			q.User, q.Kernel = amount(u), amount(k)
		}
		if t.mirror {
			q.User, q.Kernel = p.last.User, p.last.Kernel
			sampled = sampled || p.sampled
		}
		if p.id == t.top {
			q.Parent = 0
			r.Processes = append([]Process{q}, r.Processes...)
		} else {
			r.Processes = append(r.Processes, q)
		}
		sumUser += q.User
		sumKernel += q.Kernel
		sum += q.User + q.Kernel
	}
	if t.mirror {
		r.Note = joinNote(r.Note, fmt.Sprintf("GetProcessTimes of another process answers the caller's own times here (Wine): each process's times are its last sample, taken every %v while it ran (a lower bound)", SampleInterval))
	}
	if t.impossible > 0 {
		r.Note = joinNote(r.Note, fmt.Sprintf("%d samples of the process snapshot gave a process more CPU time than its life on every CPU and were not taken (Wine reads them by a Linux pid that may have been reused)", t.impossible))
	}
	if t.monitorErr != nil {
		r.Note = joinNote(r.Note, fmt.Sprintf("the job's messages stopped early (%v): the record may lack processes", t.monitorErr))
	}
	tick := "clock-tick"
	if d := clockTick(); d > 0 {
		tick = d.String()
	}
	// A job that counts no process while processes ran in it has no
	// accounting to give (Wine's, now and then): its count is what the
	// record saw, and its totals are not taken.
	empty := acctErr == nil && acct.TotalProcesses == 0 && len(t.procs)+len(t.missed) > 0
	if empty {
		r.Joined = len(t.procs) + len(t.missed)
		r.Note = joinNote(r.Note, fmt.Sprintf("the job's accounting counted no process while %d ran in it: its count and totals are the record's", r.Joined))
	}
	switch {
	case acctErr != nil:
		r.Note = joinNote(r.Note, fmt.Sprintf("the job's accounting could not be read (%v)", acctErr))
		fallthrough
	case empty, acct.TotalUserTime == 0 && acct.TotalKernelTime == 0 && acct.TotalProcesses > 0 && sum > 0:
		// The job says nothing ran while its processes say otherwise:
		// Wine's accounting is a stub. The processes' own times stand in.
		r.User, r.Kernel = sumUser, sumKernel
		if sampled {
			r.Precision = fmt.Sprintf("lower bound: each process's last sample, every %v; processes exited before they were seen are missing", SampleInterval)
		} else {
			r.Precision = "per-process handles; processes exited before they were seen are missing"
		}
	default:
		r.User, r.Kernel = duration(acct.TotalUserTime), duration(acct.TotalKernelTime)
		r.Precision = tick + " ticks: the job's accounting, in 100ns units charged a clock tick at a time"
	}
	return r
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
