package cputime

import (
	"fmt"
	"iter"
	"time"
)

// Times is what GetProcessTimes and GetThreadTimes answer, in Go types.
type Times struct {
	// Creation is the wall-clock instant the task started.
	Creation time.Time
	// Exit is the wall-clock instant the task exited; the zero Time while it
	// runs.
	Exit time.Time
	// Kernel is the CPU time spent in kernel mode. For a process it is
	// summed over all its threads, exited ones included.
	Kernel time.Duration
	// User is the CPU time spent in user mode, summed like Kernel.
	User time.Duration
}

// Total returns Kernel + User: the task's exact on-CPU time where the
// platform has it (see the package documentation).
func (t Times) Total() time.Duration { return t.Kernel + t.User }

// Filetimes returns t as the four FILETIME values of GetThreadTimes and
// GetProcessTimes: two instants and two amounts of 100 ns ticks. Durations
// are truncated to 100 ns; a zero Exit maps to Filetime 0, as on Windows.
func (t Times) Filetimes() (creation, exit Filetime, kernel, user Ticks, err error) {
	if creation, err = FiletimeFromTime(t.Creation); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("converting creation time: %w", err)
	}
	if !t.Exit.IsZero() {
		if exit, err = FiletimeFromTime(t.Exit); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("converting exit time: %w", err)
		}
	}
	if kernel, err = TicksFromDuration(t.Kernel); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("converting kernel time: %w", err)
	}
	if user, err = TicksFromDuration(t.User); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("converting user time: %w", err)
	}
	return creation, exit, kernel, user, nil
}

// Process is an open handle to one process, the counterpart of a Win32
// process handle. It is safe for concurrent use. Close it when done.
type Process struct {
	pid    int
	pseudo bool
	sys    processSys
}

// OpenProcess opens a handle to the process pid. It fails with an error
// wrapping ErrNotFound if there is no such process, ErrAccessDenied if the
// caller may not read it, and ErrInvalidArgument if pid is not positive.
func OpenProcess(pid int) (*Process, error) {
	if err := checkID("process", pid); err != nil {
		return nil, err
	}
	p := &Process{pid: pid}
	if err := p.sys.open(pid); err != nil {
		return nil, fmt.Errorf("opening process %d: %w", pid, err)
	}
	return p, nil
}

// CurrentProcess returns a pseudo-handle for the calling process, like
// Win32 GetCurrentProcess: it needs no opening, Close does nothing, and it
// takes the fastest path the platform has.
func CurrentProcess() *Process { return currentProcess }

var currentProcess = &Process{pid: getpid(), pseudo: true}

// ID returns the process id.
func (p *Process) ID() int { return p.pid }

// Times returns the process's times: creation, exit, and its kernel and user
// time summed over all its threads, including those that have exited.
// Successive calls never report a smaller Kernel or User time.
func (p *Process) Times() (Times, error) {
	t, err := p.sys.times(p)
	if err != nil {
		return Times{}, fmt.Errorf("reading times of process %d: %w", p.pid, err)
	}
	return t, nil
}

// Close releases the handle. Closing a pseudo-handle does nothing; using a
// closed handle fails with ErrClosed.
func (p *Process) Close() error {
	if p.pseudo {
		return nil
	}
	return p.sys.close()
}

// Thread is an open handle to one thread, the counterpart of a Win32 thread
// handle. It is safe for concurrent use. Close it when done.
type Thread struct {
	tid    int
	pid    int
	pseudo bool
	sys    threadSys
}

// OpenThread opens a handle to the thread tid, in any process. Thread ids
// are system-wide on Linux as on Windows. Errors are as for OpenProcess.
func OpenThread(tid int) (*Thread, error) {
	if err := checkID("thread", tid); err != nil {
		return nil, err
	}
	t := &Thread{tid: tid}
	if err := t.sys.open(t, tid); err != nil {
		return nil, fmt.Errorf("opening thread %d: %w", tid, err)
	}
	return t, nil
}

// CurrentThread returns a pseudo-handle for the calling thread, like Win32
// GetCurrentThread: it always refers to the thread that uses it, so it is
// only meaningful in a goroutine locked with runtime.LockOSThread. Times
// through it also reads the thread's creation time each call; for repeated
// reads of one thread, open a handle with OpenThread(CurrentThreadID()).
func CurrentThread() *Thread { return currentThread }

var currentThread = &Thread{pseudo: true}

// CurrentThreadID returns the id of the calling OS thread (gettid on Linux,
// GetCurrentThreadId on Windows). Without runtime.LockOSThread the goroutine
// may move to another thread right after the call.
func CurrentThreadID() int { return gettid() }

// ID returns the thread id; for the CurrentThread pseudo-handle, the id of
// the calling thread.
func (t *Thread) ID() int {
	if t.pseudo {
		return gettid()
	}
	return t.tid
}

// ProcessID returns the id of the process the thread belongs to.
func (t *Thread) ProcessID() int {
	if t.pseudo {
		return getpid()
	}
	return t.pid
}

// Times returns the thread's creation and exit instants and its kernel and
// user time. Successive calls never report a smaller Kernel or User time.
func (t *Thread) Times() (Times, error) {
	r, err := t.sys.times(t)
	if err != nil {
		if t.pseudo {
			return Times{}, fmt.Errorf("reading times of the calling thread: %w", err)
		}
		return Times{}, fmt.Errorf("reading times of thread %d of process %d: %w", t.tid, t.pid, err)
	}
	return r, nil
}

// Close releases the handle. Closing a pseudo-handle does nothing; using a
// closed handle fails with ErrClosed.
func (t *Thread) Close() error {
	if t.pseudo {
		return nil
	}
	return t.sys.close()
}

// ProcessTimes returns the times of process pid: OpenProcess, Times, Close.
func ProcessTimes(pid int) (Times, error) {
	if pid == getpid() {
		return CurrentProcess().Times()
	}
	p, err := OpenProcess(pid)
	if err != nil {
		return Times{}, err
	}
	defer p.Close()
	return p.Times()
}

// ThreadTimes returns the times of thread tid: OpenThread, Times, Close.
func ThreadTimes(tid int) (Times, error) {
	t, err := OpenThread(tid)
	if err != nil {
		return Times{}, err
	}
	defer t.Close()
	return t.Times()
}

// ThreadInfo describes one thread in an enumeration.
type ThreadInfo struct {
	ID        int    // thread id
	ProcessID int    // id of the owning process
	Name      string // thread name (Linux: comm, at most 15 bytes)
	Times     Times
}

// ProcessInfo describes one process in an enumeration.
type ProcessInfo struct {
	ID       int    // process id
	ParentID int    // parent process id; 0 if none
	Name     string // command name (Linux: comm, at most 15 bytes)
	Threads  int    // number of live threads
	Times    Times  // as Process.Times
}

// Threads returns the threads of process pid, with their times, as an
// iterator, like a Toolhelp snapshot walked with Thread32First/Thread32Next
// plus GetThreadTimes on each entry. A thread that exits during the scan is
// skipped. If the process cannot be read, the iterator yields one error
// (wrapping ErrNotFound or ErrAccessDenied) and stops.
func Threads(pid int) iter.Seq2[ThreadInfo, error] {
	return func(yield func(ThreadInfo, error) bool) {
		if err := checkID("process", pid); err != nil {
			yield(ThreadInfo{}, err)
			return
		}
		threads(pid, yield)
	}
}

// AllThreads returns every thread of every process on the system, process by
// process, as Threads does for one. Processes and threads that exit during
// the scan are skipped; processes the caller may not read are skipped too.
func AllThreads() iter.Seq2[ThreadInfo, error] {
	return allThreads
}

// Processes returns every process on the system with its times. Processes
// that exit during the scan are skipped.
func Processes() iter.Seq2[ProcessInfo, error] {
	return processes
}

// ProcessInfoOf returns the ProcessInfo of one process, as Processes would
// list it.
func ProcessInfoOf(pid int) (ProcessInfo, error) {
	if err := checkID("process", pid); err != nil {
		return ProcessInfo{}, err
	}
	info, err := processInfo(pid)
	if err != nil {
		return ProcessInfo{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	return info, nil
}

// maxID is the largest id Linux hands out (PID_MAX_LIMIT, 2^22); Windows
// ids are 32-bit multiples of 4. An id above 2^31-1 is invalid everywhere.
const maxID = 1<<31 - 1

func checkID(kind string, id int) error {
	if id <= 0 || id > maxID {
		return fmt.Errorf("%s id %d: %w", kind, id, ErrInvalidArgument)
	}
	return nil
}
