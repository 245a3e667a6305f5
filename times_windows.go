package cputime

import (
	"context"
	"errors"
	"fmt"
	"github.com/cputime/cputime/internal/account"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// On Windows every answer is the system's own: a handle is a Win32 process
// or thread handle opened with the caller's rights, and its queries are the
// native calls. The kernel binds a handle to its object, keeps the object
// (exit time and final times included) until the last handle is closed, and
// never hands the id to another task meanwhile, so nothing needs watching.

func getpid() int { return int(windows.GetCurrentProcessId()) }
func gettid() int { return int(windows.GetCurrentThreadId()) }

// winError maps the error of a Win32 call onto the package's sentinels. The
// result wraps both the sentinel and the errno (as an *os.SyscallError
// naming the call), so errors.Is works with either.
func winError(call string, err error) error {
	if err == nil {
		return nil
	}
	se := os.NewSyscallError(call, err)
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return se
	}
	switch errno {
	case windows.ERROR_ACCESS_DENIED:
		return fmt.Errorf("%w: %w", ErrAccessDenied, se)
	case windows.ERROR_INVALID_PARAMETER:
		// What OpenProcess and OpenThread answer for an id that names no
		// process or thread; ids out of range are caught before the call.
		return fmt.Errorf("%w: %w", ErrNotFound, se)
	case windows.ERROR_INVALID_HANDLE:
		return fmt.Errorf("%w: %w", ErrClosed, se)
	case windows.ERROR_CALL_NOT_IMPLEMENTED, windows.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%w: %w", ErrNotSupported, se)
	}
	return se
}

// instant converts a FILETIME instant (100 ns ticks since 1601) to a
// time.Time in the local zone, as time.Now and the Linux backend give;
// FILETIME 0, an exit time of a task still running, is the zero Time.
func instant(ft windows.Filetime) time.Time {
	f := FiletimeFromParts(ft.LowDateTime, ft.HighDateTime)
	if f == 0 {
		return time.Time{}
	}
	return f.Time().Local()
}

// amount converts a FILETIME amount (100 ns ticks) to nanoseconds. CPU
// times never come near the 29,000 years at which this would overflow.
func amount(ft windows.Filetime) uint64 {
	return uint64(TicksFromParts(ft.LowDateTime, ft.HighDateTime)) * nanosecondsPerTick
}

func timesOf(creation, exit, kernel, user windows.Filetime) Times {
	t := Times{
		Creation: instant(creation),
		Exit:     instant(exit),
		Kernel:   time.Duration(amount(kernel)),
		User:     time.Duration(amount(user)),
	}
	if !t.Exit.IsZero() {
		t.ExitSource = ExitObserved // the system's own record
	}
	return t
}

func processTimes(h windows.Handle) (Times, error) {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
		return Times{}, winError("GetProcessTimes", err)
	}
	return timesOf(c, e, k, u), nil
}

func threadTimes(h windows.Handle) (Times, error) {
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(h, &c, &e, &k, &u); err != nil {
		return Times{}, winError("GetThreadTimes", err)
	}
	return timesOf(c, e, k, u), nil
}

// handleSys is a Win32 handle shared by queries, Wait and Close. Queries and
// Wait hold mu for reading while they use the handle, so that Close, which
// holds it for writing, never closes a handle in use (a closed handle's
// value may be reused at once for another object).
type handleSys struct {
	mu     sync.RWMutex
	closed bool
	h      windows.Handle

	// Close must first wake any Wait, which holds mu for reading while it
	// blocks: it sets wake, a manual-reset event that the first Wait
	// creates, under wmu.
	wmu     sync.Mutex
	closing bool
	wake    windows.Handle

	// cleanup closes the handle if the Process or Thread is dropped
	// without Close: handleSys is allocated apart from it and never
	// refers to it.
	cleanup runtime.Cleanup
}

// wakeEvent returns the event that Close sets, creating it on first use.
func (s *handleSys) wakeEvent() (windows.Handle, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closing {
		return 0, ErrClosed
	}
	if s.wake == 0 {
		ev, err := windows.CreateEvent(nil, 1, 0, nil)
		if err != nil {
			return 0, winError("CreateEvent", err)
		}
		s.wake = ev
	}
	return s.wake, nil
}

// wait blocks until the handle's object is signalled (its task exited), the
// handle is closed, or ctx is done, in one WaitForMultipleObjects. When
// several are true at once the exit wins: Windows reports the lowest index.
func (s *handleSys) wait(ctx context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	wake, err := s.wakeEvent()
	if err != nil {
		return err
	}
	handles := [3]windows.Handle{s.h, wake}
	n := 2
	if ctx.Done() != nil {
		cancel, err := windows.CreateEvent(nil, 1, 0, nil)
		if err != nil {
			return winError("CreateEvent", err)
		}
		defer windows.CloseHandle(cancel)
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			windows.SetEvent(cancel)
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired // SetEvent must be done before the event is closed
			}
		}()
		handles[n] = cancel
		n++
	}
	event, err := windows.WaitForMultipleObjects(handles[:n], false, windows.INFINITE)
	switch event {
	case windows.WAIT_OBJECT_0:
		return nil
	case windows.WAIT_OBJECT_0 + 1:
		return ErrClosed
	case windows.WAIT_OBJECT_0 + 2:
		return ctx.Err()
	}
	if err == nil {
		err = fmt.Errorf("unexpected result %#x", event)
	}
	return winError("WaitForMultipleObjects", err)
}

func (s *handleSys) close() error {
	s.wmu.Lock()
	if s.closing {
		s.wmu.Unlock()
		return ErrClosed
	}
	s.closing = true
	s.cleanup.Stop()
	if s.wake != 0 {
		windows.SetEvent(s.wake)
	}
	s.wmu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	err := windows.CloseHandle(s.h)
	s.h = 0
	if s.wake != 0 {
		windows.CloseHandle(s.wake)
		s.wake = 0
	}
	return winError("CloseHandle", err)
}

type processSys struct {
	handleSys
}

func (p *processSys) open(h *Process, pid int, _ bool) error {
	hd, err := windows.OpenProcess(uint32(h.access), false, uint32(pid))
	if err != nil {
		return winError("OpenProcess", err)
	}
	p.h = hd
	p.cleanup = runtime.AddCleanup(h, func(s *handleSys) { s.close() }, &p.handleSys)
	return nil
}

func (p *processSys) times(h *Process) (Times, error) {
	if h.pseudo {
		return processTimes(windows.CurrentProcess())
	}
	if p == nil {
		return Times{}, ErrClosed
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Times{}, ErrClosed
	}
	return processTimes(p.h)
}

func (p *processSys) close() error {
	if p == nil {
		return ErrClosed // a zero Process: no handle
	}
	return p.handleSys.close()
}

// finalExact: the system keeps an exited process's times while a handle
// to it is open, so an exit Times reported came with them.
func (p *processSys) finalExact() bool { return p != nil }

func (p *processSys) wait(ctx context.Context, h *Process) error {
	if p == nil {
		return ErrClosed
	}
	err := p.handleSys.wait(ctx)
	runtime.KeepAlive(h) // a handle in Wait is not released under it
	return err
}

type threadSys struct {
	handleSys
}

func (t *threadSys) open(h *Thread, tid int) error {
	hd, err := windows.OpenThread(uint32(h.access), false, uint32(tid))
	if err != nil {
		return winError("OpenThread", err)
	}
	t.h = hd
	h.pid = threadProcess(hd, uint32(tid), h.access)
	t.cleanup = runtime.AddCleanup(h, func(s *handleSys) { s.close() }, &t.handleSys)
	return nil
}

// threadProcess returns the id of the process of the thread open as hd, or
// 0 if the system will not say. GetProcessIdOfThread needs a query right;
// for a handle opened without one, a second handle with the limited right
// asks, where the caller has that right.
func threadProcess(hd windows.Handle, tid uint32, access Access) int {
	if pid, err := winapi.GetProcessIdOfThread(hd); err == nil {
		return int(pid)
	}
	if access&(ThreadQueryInformation|ThreadQueryLimitedInformation) != 0 {
		return 0
	}
	q, err := windows.OpenThread(windows.THREAD_QUERY_LIMITED_INFORMATION, false, tid)
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(q)
	if pid, err := winapi.GetProcessIdOfThread(q); err == nil {
		return int(pid)
	}
	return 0
}

func (t *threadSys) times(h *Thread) (Times, error) {
	if h.pseudo {
		return threadTimes(windows.CurrentThread())
	}
	if t == nil {
		return Times{}, ErrClosed
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return Times{}, ErrClosed
	}
	return threadTimes(t.h)
}

func (t *threadSys) close() error {
	if t == nil {
		return ErrClosed // a zero Thread: no handle
	}
	return t.handleSys.close()
}

func (t *threadSys) wait(ctx context.Context, h *Thread) error {
	if t == nil {
		return ErrClosed
	}
	err := t.handleSys.wait(ctx)
	runtime.KeepAlive(h)
	return err
}

// cpuSample is a reading of the calling thread's CPU time for Measure, in
// nanoseconds: rtime is the total, utime and stime the parts whose ratio
// splits it.
type cpuSample = account.Evidence

// threadSample reads the calling thread's times (GetThreadTimes), whose
// user and kernel parts Windows advances only at the clock interrupt, by
// whole intervals of the timer (15.625 ms unless a program raised its
// rate). Where the thread's cycle count can be read and its rate is known,
// the total is that count in nanoseconds instead (QueryThreadCycleTime ÷
// ReferenceFrequency), exact to the cycle at the moment of the call, and
// the tick-sampled parts only split it, as on Linux.
func threadSample() (cpuSample, error) {
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(windows.CurrentThread(), &c, &e, &k, &u); err != nil {
		return cpuSample{}, winError("GetThreadTimes", err)
	}
	s := cpuSample{UTime: amount(u), STime: amount(k)}
	s.RTime = s.UTime + s.STime
	if hz := sampleHz(); hz != 0 {
		var cycles uint64
		if err := winapi.QueryThreadCycleTime(windows.CurrentThread(), &cycles); err != nil {
			return cpuSample{}, winError("QueryThreadCycleTime", err)
		}
		s.RTime = nanosFromCycles(cycles, hz)
	}
	return s, nil
}

// nanosFromCycles returns cycles × 1e9 / hz, in 128 bits, saturating.
func nanosFromCycles(cycles, hz uint64) uint64 {
	hi, lo := bits.Mul64(cycles, 1e9)
	if hi >= hz {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, hz)
	return q
}

// sampleHz is the rate of the calling thread's cycle count if threadSample
// can use it: the reference frequency is known and QueryThreadCycleTime
// works (Wine's fails). 0 otherwise, for good: the two samples of a region
// must be in one unit.
var sampleHz = sync.OnceValue(func() uint64 {
	f, err := referenceFrequency()
	if err != nil || f.Hz == 0 {
		return 0
	}
	var cycles uint64
	if winapi.QueryThreadCycleTime(windows.CurrentThread(), &cycles) != nil {
		return 0
	}
	return f.Hz
})

// datingOffset is 0: Windows dates creation and exit itself, once.
func datingOffset() int64 { return 0 }

// Windows has no cheaper one-shot than a handle: ProcessTimes and
// ThreadTimes open one.
func oneShotProcessTimes(pid int) (Times, error) { return openedProcessTimes(pid) }
func oneShotThreadTimes(tid int) (Times, error)  { return openedThreadTimes(tid) }
