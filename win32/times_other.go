//go:build !windows

package win32

import (
	"context"
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/cputime/cputime"
)

// GetProcessTimes reads the creation and exit instants of a process and the
// kernel and user time of all its threads, exited ones included, through
// cputime's Process.Times. creationTime and exitTime receive FILETIME
// instants (exitTime 0 while the process runs); kernelTime and userTime
// receive amounts of 100 ns ticks, truncated. The handle needs
// PROCESS_QUERY_INFORMATION or PROCESS_QUERY_LIMITED_INFORMATION, else the
// call fails with ERROR_ACCESS_DENIED; a handle that is not an open process
// handle fails with ERROR_INVALID_HANDLE, a nil pointer with
// ERROR_NOACCESS. Once the process has exited, the answer is final and
// stays so even after its id is reused.
func GetProcessTimes(handle Handle, creationTime, exitTime, kernelTime, userTime *Filetime) (err error) {
	p, err := lookupProcess(handle)
	if err != nil {
		return err
	}
	if creationTime == nil || exitTime == nil || kernelTime == nil || userTime == nil {
		return ERROR_NOACCESS
	}
	t, err := p.Times()
	if err != nil {
		return errnoOf(err)
	}
	return storeTimes(t, creationTime, exitTime, kernelTime, userTime)
}

// GetThreadTimes reads the creation and exit instants of a thread and its
// kernel and user time, through cputime's Thread.Times, as GetProcessTimes
// does for processes; the handle needs THREAD_QUERY_INFORMATION or
// THREAD_QUERY_LIMITED_INFORMATION. Through CurrentThread it reads the
// calling OS thread: lock the goroutine with runtime.LockOSThread first.
// Once the thread has exited, its times are the last ones the handle read
// (Linux frees a thread's accounting when it exits), and its exit time is
// set.
func GetThreadTimes(thread Handle, creationTime, exitTime, kernelTime, userTime *Filetime) (err error) {
	th, err := lookupThread(thread)
	if err != nil {
		return err
	}
	if creationTime == nil || exitTime == nil || kernelTime == nil || userTime == nil {
		return ERROR_NOACCESS
	}
	t, err := th.Times()
	if err != nil {
		return errnoOf(err)
	}
	return storeTimes(t, creationTime, exitTime, kernelTime, userTime)
}

func storeTimes(t cputime.Times, creationTime, exitTime, kernelTime, userTime *Filetime) error {
	c, e, k, u, err := t.Filetimes()
	if err != nil {
		return errnoOf(err)
	}
	creationTime.LowDateTime, creationTime.HighDateTime = c.Parts()
	exitTime.LowDateTime, exitTime.HighDateTime = e.Parts()
	kernelTime.LowDateTime, kernelTime.HighDateTime = k.Parts()
	userTime.LowDateTime, userTime.HighDateTime = u.Parts()
	return nil
}

// QueryThreadCycleTime reads the cycles a thread has used, through
// cputime's Thread.CycleTime: on Linux, reference (TSC) cycles computed
// from the thread's exact on-CPU time, which never decrease; see
// cputime.ReferenceFrequency for what they mean. Rights and handle errors
// are as for GetThreadTimes.
func QueryThreadCycleTime(thread Handle, cycleTime *uint64) (err error) {
	th, err := lookupThread(thread)
	if err != nil {
		return err
	}
	if cycleTime == nil {
		return ERROR_NOACCESS
	}
	c, err := th.CycleTime()
	if err != nil {
		return errnoOf(err)
	}
	*cycleTime = c
	return nil
}

// QueryProcessCycleTime reads the cycles a process has used over all its
// threads, exited ones included, through cputime's Process.CycleTime, as
// QueryThreadCycleTime does for a thread.
func QueryProcessCycleTime(process Handle, cycleTime *uint64) (err error) {
	p, err := lookupProcess(process)
	if err != nil {
		return err
	}
	if cycleTime == nil {
		return ERROR_NOACCESS
	}
	c, err := p.CycleTime()
	if err != nil {
		return errnoOf(err)
	}
	*cycleTime = c
	return nil
}

// idle is QueryIdleProcessorCycleTime's scratch buffer, reused across
// calls.
var idle struct {
	sync.Mutex
	buf []uint64
}

// QueryIdleProcessorCycleTime reads the idle cycles of every processor,
// through cputime.AppendIdleProcessorCycleTimes, into the buffer
// processorIdleCycleTime, one uint64 per processor, with the buffer
// protocol of the Win32 call. *bufferLength is the buffer's size in bytes.
// If processorIdleCycleTime is nil or the buffer is smaller than 8 bytes
// per processor, the call fails with ERROR_BAD_LENGTH and sets
// *bufferLength to the size needed; on success it sets *bufferLength to
// the bytes written. A nil bufferLength fails with ERROR_INVALID_PARAMETER
// (Windows would fault). The processors are those the system has present,
// offline ones included, in the order of their numbers.
func QueryIdleProcessorCycleTime(bufferLength *uint32, processorIdleCycleTime *uint64) (err error) {
	if bufferLength == nil {
		return ERROR_INVALID_PARAMETER
	}
	idle.Lock()
	defer idle.Unlock()
	idle.buf, err = cputime.AppendIdleProcessorCycleTimes(idle.buf[:0])
	if err != nil {
		return errnoOf(err)
	}
	need := uint32(len(idle.buf)) * 8
	if processorIdleCycleTime == nil || *bufferLength < need {
		*bufferLength = need
		return ERROR_BAD_LENGTH
	}
	copy(unsafe.Slice(processorIdleCycleTime, len(idle.buf)), idle.buf)
	*bufferLength = need
	return nil
}

// expired is a context that is already done, for checking without waiting.
var expired = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// WaitForSingleObject waits until a process or thread exits, through
// cputime's Process.Wait and Thread.Wait, for at most waitMilliseconds
// (INFINITE: without limit). It returns WAIT_OBJECT_0 once the task has
// exited, at once if it already had, and WAIT_TIMEOUT if the time runs out
// first. The handle needs SYNCHRONIZE, else the call fails with WAIT_FAILED
// and ERROR_ACCESS_DENIED, as it does for a snapshot handle, which Windows
// creates without that right; 0 or a closed handle fails with WAIT_FAILED
// and ERROR_INVALID_HANDLE. As on Windows, the pseudo-handles never become
// signalled (a task cannot outlive itself): the call returns WAIT_TIMEOUT
// after the timeout, and with INFINITE it never returns.
func WaitForSingleObject(handle Handle, waitMilliseconds uint32) (event uint32, err error) {
	o := lookup(handle)
	var wait func(context.Context) error
	switch {
	case handle == CurrentProcess() || handle == CurrentThread():
		if waitMilliseconds == INFINITE {
			select {}
		}
		time.Sleep(time.Duration(waitMilliseconds) * time.Millisecond)
		return WAIT_TIMEOUT, nil
	case o == nil:
		return WAIT_FAILED, ERROR_INVALID_HANDLE
	case o.snapshot != nil:
		// Windows checks the handle's SYNCHRONIZE right, which a snapshot
		// handle lacks, before it finds that a snapshot is not waitable.
		return WAIT_FAILED, ERROR_ACCESS_DENIED
	case o.process != nil:
		wait = o.process.Wait
	default:
		wait = o.thread.Wait
	}
	ctx := context.Background()
	if waitMilliseconds != INFINITE {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(waitMilliseconds)*time.Millisecond)
		defer cancel()
	}
	err = wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The deadline and the exit can be seen at the same moment, and
		// Wait picks either: ask again without waiting, which reports an
		// exit already recorded first.
		err = wait(expired)
		if errors.Is(err, context.Canceled) {
			return WAIT_TIMEOUT, nil
		}
	}
	if err != nil {
		return WAIT_FAILED, errnoOf(err)
	}
	return WAIT_OBJECT_0, nil
}
