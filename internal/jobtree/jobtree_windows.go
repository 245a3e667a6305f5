package jobtree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/winapi"
)

// Supported says whether Start can run a command in a job here.
const Supported = true

// stopKey is the completion key of the packet Finish posts to end the
// watch; the job's own messages carry jobKey.
const (
	jobKey  = 1
	stopKey = 2
)

// Tree is a command running in a job of its own, and the processes seen
// joining the job.
type Tree struct {
	job, port windows.Handle
	top       int
	started   time.Time // just before cmd started: no process of the job is older
	// mirror: GetProcessTimes of another process answers the caller's own
	// times (Wine), so the processes' times come from samples.
	mirror bool

	monitorDone chan struct{}
	monitorErr  error
	sampleStop  chan struct{}
	sampleDone  chan struct{}

	mu     sync.Mutex
	procs  []*proc
	missed []int

	finishOnce sync.Once
	result     Result
	closeOnce  sync.Once
}

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

// underWine reports whether the process runs under Wine, whose ntdll
// exports wine_get_version (Windows' does not).
var underWine = sync.OnceValue(func() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})

// Start starts cmd suspended, assigns it to a new job, and resumes it.
//
// If cmd cannot start, Start returns its error and cmd.Process is nil. If
// the job cannot hold cmd, Start returns an error wrapping ErrNotSupported
// and, unless strict, cmd runs outside any job (cmd.Process set); with
// strict, cmd is killed before it runs an instruction, and reaped
// (cmd.ProcessState set).
func Start(cmd *exec.Cmd, strict bool) (*Tree, error) {
	t := &Tree{monitorDone: make(chan struct{})}
	if err := t.open(); err != nil {
		t.closeHandles()
		err = fmt.Errorf("%w: %v", ErrNotSupported, err)
		if strict {
			return nil, err
		}
		if serr := cmd.Start(); serr != nil {
			return nil, serr
		}
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	t.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.closeHandles()
		return nil, err
	}
	go t.monitor()
	pid := cmd.Process.Pid
	t.top = pid
	kill := func(err error) (*Tree, error) {
		// Still suspended: it has not run one instruction.
		if h, herr := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid)); herr == nil {
			windows.TerminateProcess(h, 1)
			windows.CloseHandle(h)
		}
		cmd.Wait()
		t.Close()
		return nil, err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err == nil {
		err = windows.AssignProcessToJobObject(t.job, h)
		if err != nil {
			err = os.NewSyscallError("AssignProcessToJobObject", err)
		}
	} else {
		err = os.NewSyscallError("OpenProcess", err)
	}
	if err != nil {
		if h != 0 {
			windows.CloseHandle(h)
		}
		err = fmt.Errorf("%w: assigning process %d to a new job: %v", ErrNotSupported, pid, err)
		if strict {
			return kill(err)
		}
		if rerr := resume(pid); rerr != nil {
			return kill(rerr)
		}
		t.Close()
		return nil, err
	}
	if underWine() {
		t.mirror = mirrors(h)
	}
	windows.CloseHandle(h)
	if err := resume(pid); err != nil {
		return kill(err)
	}
	if underWine() {
		t.sampleStop, t.sampleDone = make(chan struct{}), make(chan struct{})
		go t.sample()
	}
	return t, nil
}

// open creates the job and its completion port.
func (t *Tree) open() error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return os.NewSyscallError("CreateJobObject", err)
	}
	t.job = job
	port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return os.NewSyscallError("CreateIoCompletionPort", err)
	}
	t.port = port
	// A process that asks to leave the job (CREATE_BREAKAWAY_FROM_JOB) may,
	// as it could without cputime: a job that forbids it fails its
	// creation, which would change what CMD does.
	var limits windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	limits.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&limits)), uint32(unsafe.Sizeof(limits))); err != nil {
		return os.NewSyscallError("SetInformationJobObject", err)
	}
	assoc := winapi.JOBOBJECT_ASSOCIATE_COMPLETION_PORT{CompletionKey: jobKey, CompletionPort: port}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectAssociateCompletionPortInformation,
		uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err != nil {
		return os.NewSyscallError("SetInformationJobObject", err)
	}
	return nil
}

// mirrors reports whether GetProcessTimes of h, a process that has not
// run yet, answers the caller's own nonzero times, as Wine 8 does for any
// other process; or, under Wine, the caller's times are still zero and
// cannot tell.
func mirrors(h windows.Handle) bool {
	var c, e, k, u, sc, se, sk, su windows.Filetime
	if windows.GetProcessTimes(h, &c, &e, &k, &u) != nil ||
		windows.GetProcessTimes(windows.CurrentProcess(), &sc, &se, &sk, &su) != nil {
		return true
	}
	if sk == (windows.Filetime{}) && su == (windows.Filetime{}) {
		return true
	}
	return k == sk && u == su
}

// resume resumes the threads of process pid, suspended since its creation
// (one: its main thread).
func resume(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("resuming process %d: %w", pid, os.NewSyscallError("CreateToolhelp32Snapshot", err))
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("resuming thread %d of process %d: %w", te.ThreadID, pid, os.NewSyscallError("OpenThread", err))
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resuming thread %d of process %d: %w", te.ThreadID, pid, os.NewSyscallError("ResumeThread", err))
		}
		resumed++
	}
	if resumed == 0 {
		return fmt.Errorf("resuming process %d: no thread of it in the snapshot", pid)
	}
	return nil
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

// beforeOpen, if set (by tests), runs before add opens a process other
// than the command: it can hold the monitor until the process is gone.
var beforeOpen func(pid int)

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
	for info, err := range cputime.Processes() {
		if err != nil {
			continue
		}
		p := byID[info.ID]
		// The same process, not a later one with its id.
		if p == nil || info.Times.Creation.Sub(p.creation).Abs() > time.Millisecond {
			continue
		}
		t.mu.Lock()
		if info.Times.Total() >= p.last.Total() {
			p.last, p.sampled = info.Times, true
		}
		t.mu.Unlock()
	}
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
	if t.monitorErr != nil {
		r.Note = joinNote(r.Note, fmt.Sprintf("the job's messages stopped early (%v): the record may lack processes", t.monitorErr))
	}
	tick := "clock-tick"
	if d := clockTick(); d > 0 {
		tick = d.String()
	}
	switch {
	case acctErr != nil:
		r.Note = joinNote(r.Note, fmt.Sprintf("the job's accounting could not be read (%v)", acctErr))
		fallthrough
	case acct.TotalUserTime == 0 && acct.TotalKernelTime == 0 && acct.TotalProcesses > 0 && sum > 0:
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

// Close ends the watch if Finish has not, and releases every handle. The
// job is not terminated: processes that outlive the command keep running.
func (t *Tree) Close() error {
	t.closeOnce.Do(func() {
		if t.port != 0 && t.monitorDone != nil {
			t.Finish()
		}
		t.mu.Lock()
		for _, p := range t.procs {
			windows.CloseHandle(p.h)
		}
		t.procs = nil
		t.mu.Unlock()
		t.closeHandles()
	})
	return nil
}

func (t *Tree) closeHandles() {
	if t.port != 0 {
		windows.CloseHandle(t.port)
		t.port = 0
	}
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}
