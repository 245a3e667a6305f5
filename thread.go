package cputime

import (
	"context"
	"fmt"
)

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

// Exited reports, without blocking, whether the thread has exited, as
// Process.Exited does for a process. It needs ThreadQueryLimitedInformation.
func (t *Thread) Exited() (bool, error) {
	r, err := t.Times()
	if err != nil {
		return false, err
	}
	return r.ExitSource != ExitNone, nil
}
