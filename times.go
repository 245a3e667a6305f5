package cputime

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// Times is what GetProcessTimes and GetThreadTimes answer, in Go types.
type Times struct {
	// Creation is the wall-clock instant the task started.
	Creation time.Time
	// Exit is the wall-clock instant the task exited; the zero Time while it
	// runs. ExitSource says how it was learned, and so how exact it is.
	Exit time.Time
	// ExitSource is how Exit was learned; ExitNone while the task runs.
	ExitSource ExitSource
	// Kernel is the CPU time spent in kernel mode. For a process it is
	// summed over all its threads, exited ones included.
	Kernel time.Duration
	// User is the CPU time spent in user mode, summed like Kernel.
	User time.Duration
}

// ExitSource says how an exit time was learned.
type ExitSource uint8

const (
	// ExitNone: the task has not exited (Exit is zero).
	ExitNone ExitSource = iota
	// ExitObserved: the exit was seen as it happened (Linux: a handle's
	// pidfd woke the exit watcher, 0.25–0.3 ms after the task's last
	// instruction; Windows: the system's own record).
	ExitObserved
	// ExitScheduler: the task was found already exited, and Exit is the
	// scheduler's record of when it last left the CPU (Linux:
	// se.exec_start of /proc/PID/task/TID/sched, read against the same
	// CPU's scheduler clock). It is an upper bound, later than the truth by
	// the interrupt and steal time of that CPU since then (typically well
	// under 1 %). For a process whose main thread ended before its other
	// threads, it is the main thread's exit.
	ExitScheduler
	// ExitNoLaterThan: the task was found already exited and nothing
	// records when: Exit is the moment it was found so, an upper bound only.
	ExitNoLaterThan
)

// String returns "none", "observed", "scheduler" or "no-later-than".
func (s ExitSource) String() string {
	switch s {
	case ExitNone:
		return "none"
	case ExitObserved:
		return "observed"
	case ExitScheduler:
		return "scheduler"
	case ExitNoLaterThan:
		return "no-later-than"
	}
	return fmt.Sprintf("ExitSource(%d)", uint8(s))
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
// process handle. It refers to one process for its whole life: if the
// process exits and the system hands its id to a new process, the handle
// goes on reporting the old one, with its exit time and final times. It is
// safe for concurrent use. Close it when done: until then it holds a file
// descriptor (a pidfd, or a kept-open /proc file) and its place in the exit
// watcher on Linux, a Win32 process handle on Windows. A handle dropped
// without Close gives them back once the garbage collector finds it
// unreachable, at a moment nobody controls; Close gives them back now.
type Process struct {
	pid    int
	pseudo bool
	access Access
	// sys is what the handle holds, allocated apart: the cleanup that
	// releases a dropped handle, and the exit watcher, hold it without
	// keeping the handle reachable. nil for a pseudo-handle.
	sys *processSys
}

// OpenProcess opens a handle to the process pid with the rights
// ProcessQueryLimitedInformation and Synchronize, which every query and Wait
// need and which any caller that can see the process is granted. It fails
// with an error wrapping ErrNotFound if there is no such process (or pid is
// a thread id other than a process's main thread), ErrAccessDenied if the
// caller may not read it, and ErrInvalidArgument if pid is not positive.
//
// A process that has exited but has not yet been waited for by its parent
// (a zombie) can still be opened; its handle reports it as exited.
func OpenProcess(pid int) (*Process, error) {
	return OpenProcessAccess(pid, defaultProcessAccess)
}

// OpenProcessAccess opens a handle to the process pid with the given access
// rights, checked now as Windows checks them (see Access for what they mean
// on Linux). A query the rights do not cover fails with ErrAccessDenied.
// Rights other than ProcessQueryInformation, ProcessQueryLimitedInformation
// and Synchronize are an ErrInvalidArgument.
func OpenProcessAccess(pid int, access Access) (*Process, error) {
	return openProcess(pid, access, true)
}

// openProcess opens a process handle; watch is whether to learn the exit
// the moment it happens, which a one-shot query does not need.
func openProcess(pid int, access Access, watch bool) (*Process, error) {
	if err := checkID("process", pid); err != nil {
		return nil, err
	}
	access, err := checkAccess(access, allProcessAccess, ProcessQueryInformation, ProcessQueryLimitedInformation)
	if err != nil {
		return nil, fmt.Errorf("opening process %d: %w", pid, err)
	}
	p := &Process{pid: pid, access: access, sys: new(processSys)}
	if err := p.sys.open(p, pid, watch); err != nil {
		return nil, fmt.Errorf("opening process %d: %w", pid, err)
	}
	return p, nil
}

// CurrentProcess returns a pseudo-handle for the calling process, like
// Win32 GetCurrentProcess: it needs no opening, has every right, Close does
// nothing, and it takes the fastest path the platform has.
func CurrentProcess() *Process { return currentProcess }

var currentProcess = &Process{pid: getpid(), pseudo: true, access: allProcessAccess}

// ID returns the process id.
func (p *Process) ID() int { return p.pid }

// Access returns the rights the handle was opened with.
func (p *Process) Access() Access { return p.access }

// Times returns the process's times: creation, exit, and its kernel and user
// time summed over all its threads, including those that have exited.
// Successive calls never report a smaller Kernel or User time.
//
// Once the process has exited, Times reports its exit time and its final
// times, from then on, even after its id has been reused. How exact they are
// is described in the package documentation (Exit).
func (p *Process) Times() (Times, error) {
	if err := need(p.access, ProcessQueryLimitedInformation); err != nil {
		return Times{}, fmt.Errorf("reading times of process %d: %w", p.pid, err)
	}
	t, err := p.sys.times(p)
	if err != nil {
		return Times{}, fmt.Errorf("reading times of process %d: %w", p.pid, err)
	}
	return t, nil
}

// Wait blocks until the process exits or ctx is done, like Win32
// WaitForSingleObject on a process handle; it returns ctx.Err() in the
// latter case, and ErrClosed if the handle is closed meanwhile. After Wait
// returns nil, Times reports the exit. Wait needs the Synchronize right.
// A goroutine in Wait costs nothing while the process runs, however many
// there are. On Linux, Wait reads the process's times once when it starts,
// then nothing: the exit watcher, one goroutine for every handle, woken by
// the kernel through the handles' pidfds (without pidfds, one poller for
// every handle, looking every 10 to 250 ms), records the exit and reads the
// final times. If the process is not the caller's child and its parent
// reaps it before that read, the handle keeps the last times it saw: as of
// Wait's start or the latest Times call, so call Times now and then to keep
// them recent (the cputime command's wait reads them every 10 ms). On
// Windows Wait blocks in WaitForMultipleObjects, and the final times are
// always the system's.
//
// Wait does not reap the process: on Linux, a child of the caller stays a
// zombie until its parent waits for it (exec.Cmd.Wait or os.Process.Wait),
// and its final times are exact only if they are read before then. To
// measure a child started with os/exec exactly, call Wait on its handle
// before cmd.Wait. (On Windows the order does not matter.)
func (p *Process) Wait(ctx context.Context) error {
	if err := need(p.access, Synchronize); err != nil {
		return fmt.Errorf("waiting for process %d: %w", p.pid, err)
	}
	if p.pseudo {
		return fmt.Errorf("waiting for process %d: %w: a process cannot wait for its own exit", p.pid, ErrInvalidArgument)
	}
	if err := p.sys.wait(ctx, p); err != nil {
		return fmt.Errorf("waiting for process %d: %w", p.pid, err)
	}
	return nil
}

// Close releases the handle; a Wait in progress on it returns ErrClosed.
// Closing a pseudo-handle does nothing; using a closed handle fails with
// ErrClosed.
func (p *Process) Close() error {
	if p.pseudo {
		return nil
	}
	return p.sys.close()
}

// Thread is an open handle to one thread, the counterpart of a Win32 thread
// handle. Like Process, it refers to one thread for its whole life and
// keeps answering after the thread exits. It is safe for concurrent use.
// Close it when done; as for Process, a handle dropped without Close gives
// back what it holds once the garbage collector finds it unreachable.
type Thread struct {
	tid    int
	pid    int
	pseudo bool
	access Access
	sys    *threadSys // as for Process
}

// OpenThread opens a handle to the thread tid, in any process, with the
// rights ThreadQueryLimitedInformation and Synchronize. Thread ids are
// system-wide on Linux as on Windows. Errors are as for OpenProcess.
func OpenThread(tid int) (*Thread, error) {
	return OpenThreadAccess(tid, defaultThreadAccess)
}

// OpenThreadAccess opens a handle to the thread tid with the given access
// rights: ThreadQueryInformation, ThreadQueryLimitedInformation and
// Synchronize, as for OpenProcessAccess.
func OpenThreadAccess(tid int, access Access) (*Thread, error) {
	if err := checkID("thread", tid); err != nil {
		return nil, err
	}
	access, err := checkAccess(access, allThreadAccess, ThreadQueryInformation, ThreadQueryLimitedInformation)
	if err != nil {
		return nil, fmt.Errorf("opening thread %d: %w", tid, err)
	}
	t := &Thread{tid: tid, access: access, sys: new(threadSys)}
	if err := t.sys.open(t, tid); err != nil {
		return nil, fmt.Errorf("opening thread %d: %w", tid, err)
	}
	return t, nil
}

// CurrentThread returns a pseudo-handle for the calling thread, like Win32
// GetCurrentThread: it always refers to the thread that uses it, so it is
// only meaningful in a goroutine locked with runtime.LockOSThread. Times
// through it also reads the thread's creation time each call; for repeated
// reads of one thread, open a handle with OpenThread(CurrentThreadID()), and
// to measure a region of Go code, use Measure.
func CurrentThread() *Thread { return currentThread }

var currentThread = &Thread{pseudo: true, access: allThreadAccess}

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

// ProcessID returns the id of the process the thread belongs to. On
// Windows it is 0 for a handle to a thread the caller may not query (opened
// with Synchronize only, where even the limited query right is refused).
func (t *Thread) ProcessID() int {
	if t.pseudo {
		return getpid()
	}
	return t.pid
}

// Access returns the rights the handle was opened with.
func (t *Thread) Access() Access { return t.access }

// Times returns the thread's creation and exit instants and its kernel and
// user time. Successive calls never report a smaller Kernel or User time.
// Once the thread has exited, Times reports its exit time and its last
// times, as Process.Times does.
func (t *Thread) Times() (Times, error) {
	if err := need(t.access, ThreadQueryLimitedInformation); err != nil {
		return Times{}, t.errorf("reading times of", err)
	}
	r, err := t.sys.times(t)
	if err != nil {
		return Times{}, t.errorf("reading times of", err)
	}
	return r, nil
}

func (t *Thread) errorf(doing string, err error) error {
	if t.pseudo {
		return fmt.Errorf("%s the calling thread: %w", doing, err)
	}
	return fmt.Errorf("%s thread %d of process %d: %w", doing, t.tid, t.pid, err)
}

// Wait blocks until the thread exits or ctx is done, like Win32
// WaitForSingleObject on a thread handle. It needs the Synchronize right.
// Like Process.Wait, it reads nothing while it waits; a thread's final
// times are the last the handle read (see Times), at the latest when the
// exit watcher or poller saw the exit.
func (t *Thread) Wait(ctx context.Context) error {
	if err := need(t.access, Synchronize); err != nil {
		return t.errorf("waiting for", err)
	}
	if t.pseudo {
		return t.errorf("waiting for", fmt.Errorf("%w: a thread cannot wait for its own exit", ErrInvalidArgument))
	}
	if err := t.sys.wait(ctx, t); err != nil {
		return t.errorf("waiting for", err)
	}
	return nil
}

// Close releases the handle; a Wait in progress on it returns ErrClosed.
// Closing a pseudo-handle does nothing; using a closed handle fails with
// ErrClosed.
func (t *Thread) Close() error {
	if t.pseudo {
		return nil
	}
	return t.sys.close()
}

// ProcessTimes returns the times of process pid, as OpenProcess, Times and
// Close would, at less cost, with no exit watcher. On Linux a first read
// of an id holds the process's stat file open across the read (the kernel
// binds it to the process, so a reused id never answers); later reads of
// the same id hold a pidfd instead and find the start time the first read
// found, remembered under the pidfd's pidfs inode number, which no other
// process has (Linux 6.9): about 8 clock reads' cost instead of 21.
func ProcessTimes(pid int) (Times, error) {
	if err := checkID("process", pid); err != nil {
		return Times{}, err
	}
	if pid == getpid() {
		return CurrentProcess().Times()
	}
	return oneShotProcessTimes(pid)
}

// ThreadTimes returns the times of thread tid, as OpenThread, Times and
// Close would, at less cost (see ProcessTimes; later reads of an id use a
// thread pidfd).
func ThreadTimes(tid int) (Times, error) {
	if err := checkID("thread", tid); err != nil {
		return Times{}, err
	}
	return oneShotThreadTimes(tid)
}

// openedProcessTimes is ProcessTimes through a handle: OpenProcess (without
// the exit watcher), Times, Close.
func openedProcessTimes(pid int) (Times, error) {
	p, err := openProcess(pid, defaultProcessAccess, false)
	if err != nil {
		return Times{}, err
	}
	defer p.Close()
	return p.Times()
}

// openedThreadTimes is ThreadTimes through a handle.
func openedThreadTimes(tid int) (Times, error) {
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
	Name      string // thread name (Linux: comm, at most 15 bytes; Windows: empty)
	Times     Times
}

// ProcessInfo describes one process in an enumeration.
type ProcessInfo struct {
	ID       int    // process id
	ParentID int    // parent process id; 0 if none
	Name     string // command name (Linux: comm, at most 15 bytes; Windows: image name)
	Threads  int    // number of live threads
	Times    Times  // as Process.Times

	// Cycles is the process's cycle time in reference cycles, as
	// QueryProcessCycleTime counts it, where the enumeration gets it at no
	// extra cost. On Windows it is the CycleTime of the system's process
	// snapshot (SYSTEM_PROCESS_INFORMATION), the kernel's own count. On
	// Linux it is 0: the count there is Times.Total() × ReferenceFrequency
	// (what ProcessCycleTime returns), and the enumeration does not ask for
	// the frequency, which may cost a calibration. 0 also where the system
	// does not fill it in (Wine).
	Cycles uint64
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
// the scan are skipped; processes the caller may not read are skipped too
// (on Linux; the Windows snapshot has every process, see the package
// documentation).
func AllThreads() iter.Seq2[ThreadInfo, error] {
	return allThreads
}

// Processes returns every process on the system with its times. Processes
// that exit during the scan are skipped. A process that cannot be read (on
// Linux, another user's under hidepid=1: ErrAccessDenied) is yielded with
// an error and a ProcessInfo holding only its ID, and the scan goes on.
func Processes() iter.Seq2[ProcessInfo, error] {
	return processes
}

// ProcessInfoOf returns the ProcessInfo of one process, as Processes would
// list it.
func ProcessInfoOf(pid int) (ProcessInfo, error) {
	if err := checkID("process", pid); err != nil {
		return ProcessInfo{}, err
	}
	info, err := processInfoOf(pid)
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
