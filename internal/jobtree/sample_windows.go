package jobtree

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/winapi"
)

// proc is one process seen joining the job, with the handle that keeps its
// times.
type proc struct {
	h        windows.Handle
	id       int
	parent   int
	name     string
	creation time.Time
	after    time.Time // a creation time before this one is not yet set
	// last is its last sample (Wine), sampled says there is one.
	last    cputime.Times
	sampled bool
}

// monitor reads the job's messages until Finish's stop packet, and opens
// each process that joins.
func (t *Tree) monitor() {
	defer close(t.monitorDone)
	for {
		var msg uint32
		var key, value uintptr
		if err := winapi.GetQueuedCompletionStatusValue(t.port, &msg, &key, &value, windows.INFINITE); err != nil {
			t.monitorErr = os.NewSyscallError("GetQueuedCompletionStatus", err)
			return
		}
		if key == stopKey {
			return
		}
		if key == jobKey && msg == winapi.JOB_OBJECT_MSG_NEW_PROCESS {
			t.add(int(value))
		}
		if key == jobKey && msg == winapi.JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO {
			t.emptyOnce.Do(func() { close(t.empty) })
		}
	}
}

// add opens process pid, which has just joined the job, and keeps the
// handle: its times stay readable after it exits.
func (t *Tree) add(pid int) {
	if beforeOpen != nil && pid != t.top {
		beforeOpen(pid)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err == nil {
		// The process may be gone and its id reused by a stranger.
		if err = t.holds(h, pid); err != nil {
			windows.CloseHandle(h)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.missed = append(t.missed, pid)
		return
	}
	p := &proc{h: h, id: pid, after: t.started.Add(-time.Second)}
	var pbi windows.PROCESS_BASIC_INFORMATION
	if windows.NtQueryInformationProcess(h, windows.ProcessBasicInformation, unsafe.Pointer(&pbi), uint32(unsafe.Sizeof(pbi)), nil) == nil {
		p.parent = int(pbi.InheritedFromUniqueProcessId)
	}
	p.identify()
	t.procs = append(t.procs, p)
}

// identify reads the process's name and creation time where they are not
// known yet: Wine posts NEW_PROCESS before it has either (its creation
// time is then a value from long ago, not zero).
func (p *proc) identify() {
	if p.name == "" {
		buf := make([]uint16, 1024)
		n := uint32(len(buf))
		if windows.QueryFullProcessImageName(p.h, 0, &buf[0], &n) == nil {
			p.name = filepath.Base(windows.UTF16ToString(buf[:n]))
		}
	}
	if p.creation.IsZero() {
		var c, e, k, u windows.Filetime
		if windows.GetProcessTimes(p.h, &c, &e, &k, &u) == nil {
			if at := time.Unix(0, c.Nanoseconds()); at.After(p.after) {
				p.creation = at
			}
		}
	}
}

// holds says whether h, process pid, is in the job. Windows answers
// IsProcessInJob for a PROCESS_QUERY_LIMITED_INFORMATION handle; Wine wants
// PROCESS_QUERY_INFORMATION, so it gets a second handle, which names the
// same process: h keeps pid from being reused.
func (t *Tree) holds(h windows.Handle, pid int) error {
	var in int32
	err := winapi.IsProcessInJob(h, t.job, &in)
	if err == windows.ERROR_ACCESS_DENIED {
		h2, oerr := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
		if oerr != nil {
			return os.NewSyscallError("OpenProcess", oerr)
		}
		err = winapi.IsProcessInJob(h2, t.job, &in)
		windows.CloseHandle(h2)
	}
	if err != nil {
		return os.NewSyscallError("IsProcessInJob", err)
	}
	if in == 0 {
		return fmt.Errorf("process %d is not in the job (its id was reused)", pid)
	}
	return nil
}

// sample reads the job's processes' times from the process snapshot every
// SampleInterval until Finish (Wine: see the package doc).
func (t *Tree) sample() {
	defer close(t.sampleDone)
	tick := time.NewTicker(SampleInterval)
	defer tick.Stop()
	for {
		t.sampleOnce()
		select {
		case <-t.sampleStop:
			return
		case <-tick.C:
		}
	}
}

func (t *Tree) sampleOnce() {
	t.mu.Lock()
	byID := make(map[int]*proc, len(t.procs))
	for _, p := range t.procs {
		p.identify()
		if !p.creation.IsZero() {
			byID[p.id] = p
		}
	}
	t.mu.Unlock()
	if len(byID) == 0 {
		return
	}
	var seen []sample
	for info, err := range cputime.Processes() {
		if err != nil {
			continue
		}
		p := byID[info.ID]
		// The same process, not a later one with its id.
		if p == nil || info.Times.Creation.Sub(p.creation).Abs() > time.Millisecond {
			continue
		}
		seen = append(seen, sample{p, info.Times})
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range seen {
		switch s.p.check(s.times, now) {
		case sampleStale:
			continue
		case sampleImpossible:
			t.impossible++
			continue
		}
		if s.times.Total() >= s.p.last.Total() {
			s.p.last, s.p.sampled = s.times, true
		}
	}
}

type sample struct {
	p     *proc
	times cputime.Times
}

const (
	sampleGood       = iota
	sampleStale      // the process exited: the snapshot may not be its
	sampleImpossible // more than the process could have run
)

// check says whether times, read from the process snapshot before now,
// are the process's. Wine reads a process's times from /proc under the
// Linux pid of the process that ran it, which is reused once that process
// has exited and been reaped, while Wine may still list it: a snapshot
// taken then reads another Linux process's times, which can sum to far
// more than the tree used beside programs that create thousands of tasks.
// A process still running after the snapshot was running during it, its
// pid its own; and no process runs longer than its life on every CPU.
func (p *proc) check(times cputime.Times, now time.Time) int {
	if ev, err := windows.WaitForSingleObject(p.h, 0); err != nil || ev != uint32(windows.WAIT_TIMEOUT) {
		return sampleStale // its last sample stands
	}
	if times.Total() > time.Duration(runtime.NumCPU())*now.Sub(p.creation)+SampleInterval {
		return sampleImpossible
	}
	return sampleGood
}

// clockTick is the unit in which Windows charges CPU time, 0 if the
// system does not say: the kernel counts a thread's times in clock ticks
// and reports them times KeMaximumIncrement, the longest clock interval
// (15.625 ms by default, whatever timeBeginPeriod asks), which is what
// GetSystemTimeAdjustment returns as its time increment.
func clockTick() time.Duration {
	var adj, inc uint32
	var disabled int32
	if winapi.GetSystemTimeAdjustment(&adj, &inc, &disabled) != nil {
		return 0
	}
	return time.Duration(inc) * 100
}

func duration(ticks int64) time.Duration { return time.Duration(ticks) * 100 }

func amount(ft windows.Filetime) time.Duration {
	return duration(int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime))
}
