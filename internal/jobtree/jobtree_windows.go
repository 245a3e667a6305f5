package jobtree

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

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
	// empty is closed when the job's last process exits
	// (JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO).
	empty      chan struct{}
	emptyOnce  sync.Once
	sampleStop chan struct{}
	sampleDone chan struct{}

	mu     sync.Mutex
	procs  []*proc
	missed []int
	// impossible counts the samples not taken because they were more
	// than their process could have run (Wine: see proc.check).
	impossible int

	finishOnce sync.Once
	result     Result
	closeOnce  sync.Once
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
	t := &Tree{monitorDone: make(chan struct{}), empty: make(chan struct{})}
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
// cannot tell. The caller's times are read before and after h's, and h's
// mirror them if they lie between the two: the caller's other threads run
// meanwhile, and one reading of each, compared for equality, can be told
// apart by a tick (every process of a tree would then be given cputime's
// own times).
func mirrors(h windows.Handle) bool {
	var c, e, k, u windows.Filetime
	var before, after [2]windows.Filetime // kernel, user
	if windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &before[0], &before[1]) != nil ||
		windows.GetProcessTimes(h, &c, &e, &k, &u) != nil ||
		windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &after[0], &after[1]) != nil {
		return true
	}
	if after == [2]windows.Filetime{} {
		return true
	}
	return between(before[0], k, after[0]) && between(before[1], u, after[1])
}

// between reports whether a <= x <= b.
func between(a, x, b windows.Filetime) bool {
	n := func(f windows.Filetime) uint64 { return uint64(f.HighDateTime)<<32 | uint64(f.LowDateTime) }
	return n(a) <= n(x) && n(x) <= n(b)
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

// beforeOpen, if set (by tests), runs before add opens a process other
// than the command: it can hold the monitor until the process is gone.
var beforeOpen func(pid int)

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
