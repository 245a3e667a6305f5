//go:build !windows

package win32

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"github.com/cputime/cputime"
)

// object is what a handle refers to: exactly one of the three fields is set.
type object struct {
	process  *cputime.Process
	thread   *cputime.Thread
	snapshot *snapshot
}

// handles is the handle table. Handles are multiples of 4, as on Windows,
// handed out in increasing order, so a closed handle's number comes back
// only after the counter wraps (2^62 opens on 64-bit systems), and never
// while it is still open. Lookups take the read lock only: GetProcessTimes
// and GetThreadTimes through an open handle allocate nothing here.
var handles = struct {
	sync.RWMutex
	last Handle
	m    map[Handle]*object
}{m: make(map[Handle]*object)}

// The pseudo-handles need no table entry: they are the values x/sys
// returns, -1 and -2, never multiples of 4.
var (
	currentProcessObject = &object{process: cputime.CurrentProcess()}
	currentThreadObject  = &object{thread: cputime.CurrentThread()}
)

func addHandle(o *object) Handle {
	handles.Lock()
	defer handles.Unlock()
	for {
		handles.last += 4
		if _, used := handles.m[handles.last]; handles.last != 0 && !used {
			break
		}
	}
	handles.m[handles.last] = o
	return handles.last
}

// lookup returns the object h refers to, or nil if h is not open.
func lookup(h Handle) *object {
	switch h {
	case CurrentProcess():
		return currentProcessObject
	case CurrentThread():
		return currentThreadObject
	}
	handles.RLock()
	o := handles.m[h]
	handles.RUnlock()
	return o
}

func lookupProcess(h Handle) (*cputime.Process, error) {
	if o := lookup(h); o != nil && o.process != nil {
		return o.process, nil
	}
	return nil, ERROR_INVALID_HANDLE
}

func lookupThread(h Handle) (*cputime.Thread, error) {
	if o := lookup(h); o != nil && o.thread != nil {
		return o.thread, nil
	}
	return nil, ERROR_INVALID_HANDLE
}

// errnoOf maps an error of the cputime package to the Win32 error Windows
// gives in the same case.
func errnoOf(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cputime.ErrClosed):
		return ERROR_INVALID_HANDLE
	case errors.Is(err, cputime.ErrAccessDenied):
		return ERROR_ACCESS_DENIED
	case errors.Is(err, cputime.ErrNotFound), errors.Is(err, cputime.ErrInvalidArgument):
		return ERROR_INVALID_PARAMETER
	case errors.Is(err, cputime.ErrNotSupported):
		return ERROR_CALL_NOT_IMPLEMENTED
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return ERROR_TOO_MANY_OPEN_FILES // every handle holds a descriptor
	case errors.Is(err, syscall.ENOMEM):
		return ERROR_NOT_ENOUGH_MEMORY
	}
	return ERROR_GEN_FAILURE
}

// Rights OpenProcess and OpenThread can grant on this system: the ones the
// calls of this package check, which cputime checks as Windows does.
const (
	processRights = PROCESS_QUERY_INFORMATION | PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE
	threadRights  = THREAD_QUERY_INFORMATION | THREAD_QUERY_LIMITED_INFORMATION | SYNCHRONIZE
)

// OpenProcess opens a handle to the process processId with the rights
// desiredAccess, through cputime.OpenProcessAccess, which checks them now
// as Windows does. It fails with ERROR_INVALID_PARAMETER if processId is 0
// or no such process exists, and ERROR_ACCESS_DENIED if a right is refused:
// PROCESS_QUERY_INFORMATION where the caller may not read the process as a
// debugger would, and every right other than PROCESS_QUERY_INFORMATION,
// PROCESS_QUERY_LIMITED_INFORMATION and SYNCHRONIZE (such as
// PROCESS_VM_READ or PROCESS_TERMINATE) always, because no call here uses
// them and Linux cannot grant them through this package: a handle that
// claimed them would promise what it cannot do. inheritHandle is ignored:
// handles are this process's table entries, which no child inherits.
func OpenProcess(desiredAccess uint32, inheritHandle bool, processId uint32) (handle Handle, err error) {
	p, err := cputime.OpenProcessAccess(int(processId), cputime.Access(desiredAccess&processRights))
	if err != nil {
		return 0, errnoOf(err)
	}
	if desiredAccess&^processRights != 0 {
		p.Close()
		return 0, ERROR_ACCESS_DENIED
	}
	return addHandle(&object{process: p}), nil
}

// OpenThread opens a handle to the thread threadId, in any process, as
// OpenProcess does for processes: THREAD_QUERY_INFORMATION,
// THREAD_QUERY_LIMITED_INFORMATION and SYNCHRONIZE can be granted, any
// other right fails with ERROR_ACCESS_DENIED, and inheritHandle is
// ignored.
func OpenThread(desiredAccess uint32, inheritHandle bool, threadId uint32) (handle Handle, err error) {
	t, err := cputime.OpenThreadAccess(int(threadId), cputime.Access(desiredAccess&threadRights))
	if err != nil {
		return 0, errnoOf(err)
	}
	if desiredAccess&^threadRights != 0 {
		t.Close()
		return 0, ERROR_ACCESS_DENIED
	}
	return addHandle(&object{thread: t}), nil
}

// CloseHandle closes a handle returned by OpenProcess, OpenThread or
// CreateToolhelp32Snapshot. Closing a pseudo-handle succeeds and does
// nothing; closing 0, a closed handle or any other value fails with
// ERROR_INVALID_HANDLE. A call still using the handle in another goroutine
// fails with ERROR_INVALID_HANDLE, or completes as if the handle had been
// closed just after it.
func CloseHandle(handle Handle) (err error) {
	if handle == CurrentProcess() || handle == CurrentThread() {
		return nil
	}
	handles.Lock()
	o := handles.m[handle]
	delete(handles.m, handle)
	handles.Unlock()
	switch {
	case o == nil:
		return ERROR_INVALID_HANDLE
	case o.process != nil:
		return errnoOf(o.process.Close())
	case o.thread != nil:
		return errnoOf(o.thread.Close())
	}
	o.snapshot.close()
	return nil
}

// CurrentProcess returns the pseudo-handle of the calling process, -1 as on
// Windows. It has every right and needs no closing.
func CurrentProcess() Handle { return ^Handle(0) }

// CurrentThread returns the pseudo-handle of the calling thread, -2 as on
// Windows. It always refers to the thread that uses it, so in Go it is
// meaningful only in a goroutine locked to its thread with
// runtime.LockOSThread.
func CurrentThread() Handle { return ^Handle(1) }

// GetCurrentProcessId returns the id of the calling process.
func GetCurrentProcessId() (pid uint32) { return uint32(os.Getpid()) }

// GetCurrentThreadId returns the id of the calling thread (gettid on
// Linux). Without runtime.LockOSThread the goroutine may move to another
// thread right after the call.
func GetCurrentThreadId() (id uint32) { return uint32(cputime.CurrentThreadID()) }

// GetProcessId returns the id of the process of a process handle. As on
// Windows, the handle needs PROCESS_QUERY_INFORMATION or
// PROCESS_QUERY_LIMITED_INFORMATION.
func GetProcessId(process Handle) (id uint32, err error) {
	p, err := lookupProcess(process)
	if err != nil {
		return 0, err
	}
	if p.Access()&cputime.ProcessQueryLimitedInformation == 0 {
		return 0, ERROR_ACCESS_DENIED
	}
	return uint32(p.ID()), nil
}

// GetThreadId returns the id of the thread of a thread handle. As on
// Windows, the handle needs THREAD_QUERY_INFORMATION or
// THREAD_QUERY_LIMITED_INFORMATION.
func GetThreadId(thread Handle) (id uint32, err error) {
	t, err := lookupThread(thread)
	if err != nil {
		return 0, err
	}
	if t.Access()&cputime.ThreadQueryLimitedInformation == 0 {
		return 0, ERROR_ACCESS_DENIED
	}
	return uint32(t.ID()), nil
}

// GetProcessIdOfThread returns the id of the process a thread belongs to,
// with the rights GetThreadId needs.
func GetProcessIdOfThread(thread Handle) (id uint32, err error) {
	t, err := lookupThread(thread)
	if err != nil {
		return 0, err
	}
	if t.Access()&cputime.ThreadQueryLimitedInformation == 0 {
		return 0, ERROR_ACCESS_DENIED
	}
	return uint32(t.ProcessID()), nil
}
