package cputime

import (
	"context"
	"fmt"
)

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

// FinalExact reports whether the process has exited and Times holds its
// exact final times. On Linux they are exact when read after the exit,
// from what the kernel keeps of the process until its parent reaps it (its
// zombie): they then agree with the parent's wait accounting (rusage) to
// the microsecond. When the parent reaped it first, Times holds the last
// times the handle saw, short by what the process ran since, and
// FinalExact is false: a caller that reports them can say so (the cputime
// command's wait does). On Windows the system keeps an exited process's
// times while a handle is open: true once it has exited. Like Exited, it
// reads the times once, which records the exit if it finds it; false, nil
// while the process runs, and for the CurrentProcess pseudo-handle. It
// needs ProcessQueryLimitedInformation.
func (p *Process) FinalExact() (bool, error) {
	t, err := p.Times()
	if err != nil {
		return false, err
	}
	if p.pseudo || t.ExitSource == ExitNone {
		return false, nil
	}
	return p.sys.finalExact(), nil
}

// Exited reports, without blocking, whether the process has exited: one
// Times read, which records the exit if it finds it (so Times and Wait
// report it from then on). The CurrentProcess pseudo-handle has not. It
// needs ProcessQueryLimitedInformation.
func (p *Process) Exited() (bool, error) {
	t, err := p.Times()
	if err != nil {
		return false, err
	}
	return t.ExitSource != ExitNone, nil
}
