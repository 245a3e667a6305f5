package cputime

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/freq"
	"github.com/cputime/cputime/internal/winapi"
)

// Windows counts cycles itself: each answer is the native call's, read
// through the handle, and needs no reference frequency.

// referenceFrequency is computed once, on first use: the calibration it may
// run must never happen at import, nor unless cycles are asked for.
var referenceFrequency = sync.OnceValues(func() (CycleFrequency, error) {
	return frequencyFrom(freq.Reference())
})

func (p *Process) cycleTime() (uint64, error) {
	var cycles uint64
	if p.pseudo {
		if err := winapi.QueryProcessCycleTime(windows.CurrentProcess(), &cycles); err != nil {
			return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, winError("QueryProcessCycleTime", err))
		}
		return cycles, nil
	}
	s := p.sys
	if s == nil {
		return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, ErrClosed)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, ErrClosed)
	}
	if err := winapi.QueryProcessCycleTime(s.h, &cycles); err != nil {
		return 0, fmt.Errorf("reading cycle time of process %d: %w", p.pid, winError("QueryProcessCycleTime", err))
	}
	return cycles, nil
}

func (t *Thread) cycleTime() (uint64, error) {
	var cycles uint64
	if t.pseudo {
		if err := winapi.QueryThreadCycleTime(windows.CurrentThread(), &cycles); err != nil {
			return 0, t.errorf("reading cycle time of", winError("QueryThreadCycleTime", err))
		}
		return cycles, nil
	}
	s := t.sys
	if s == nil {
		return 0, t.errorf("reading cycle time of", ErrClosed)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, t.errorf("reading cycle time of", ErrClosed)
	}
	if err := winapi.QueryThreadCycleTime(s.h, &cycles); err != nil {
		return 0, t.errorf("reading cycle time of", winError("QueryThreadCycleTime", err))
	}
	return cycles, nil
}

// appendIdleCycles appends QueryIdleProcessorCycleTime's answer. That call
// answers for the processor group of the calling thread only, which may be
// any group on a machine with several (more than 64 logical processors):
// there each group is read in turn with QueryIdleProcessorCycleTimeEx, so
// index i is still processor i of the whole machine.
func appendIdleCycles(dst []uint64) ([]uint64, error) {
	if underWine() {
		return dst, fmt.Errorf("reading idle processor cycle times: %w (Wine does not implement QueryIdleProcessorCycleTime: calling it aborts the process)", ErrNotSupported)
	}
	n := len(dst)
	groups := winapi.GetActiveProcessorGroupCount()
	if groups <= 1 {
		dst, err := appendIdleGroup(dst, "QueryIdleProcessorCycleTime", windows.GetActiveProcessorCount(windows.ALL_PROCESSOR_GROUPS), winapi.QueryIdleProcessorCycleTime)
		if err != nil {
			return dst[:n], fmt.Errorf("reading idle processor cycle times: %w", err)
		}
		return dst, nil
	}
	for g := range groups {
		var err error
		dst, err = appendIdleGroup(dst, "QueryIdleProcessorCycleTimeEx", windows.GetActiveProcessorCount(g), func(size *uint32, buf *uint64) error {
			return winapi.QueryIdleProcessorCycleTimeEx(g, size, buf)
		})
		if err != nil {
			return dst[:n], fmt.Errorf("reading idle processor cycle times of processor group %d: %w", g, err)
		}
	}
	return dst, nil
}

// appendIdleGroup appends the idle cycle times of one processor group,
// with the buffer protocol of QueryIdleProcessorCycleTime: the buffer size
// in bytes goes in, and comes back as the size written or, when the call
// fails with ERROR_BAD_LENGTH or ERROR_INSUFFICIENT_BUFFER, as the size
// needed. count is the expected number of processors, a first guess.
func appendIdleGroup(dst []uint64, call string, count uint32, query func(size *uint32, buf *uint64) error) ([]uint64, error) {
	n := len(dst)
	want := max(int(count), 1)
	for range 4 { // the count changes only if processors are added meanwhile
		dst = slices.Grow(dst[:n], want)[:n+want]
		size := uint32(8 * want)
		err := query(&size, &dst[n])
		if err == nil {
			if int(size/8) > want {
				return dst[:n], winError(call, fmt.Errorf("wrote %d bytes to a buffer of %d", size, 8*want))
			}
			return dst[:n+int(size/8)], nil
		}
		var errno syscall.Errno
		if !errors.As(err, &errno) || (errno != windows.ERROR_BAD_LENGTH && errno != windows.ERROR_INSUFFICIENT_BUFFER) || int(size/8) <= want {
			return dst[:n], winError(call, err)
		}
		want = int(size / 8)
	}
	return dst[:n], winError(call, windows.ERROR_BAD_LENGTH)
}

// underWine reports whether the process runs under Wine, whose ntdll
// exports wine_get_version (Windows' does not).
var underWine = sync.OnceValue(func() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})

// processCycleNanos and threadCycleNanos: Windows takes the handle path.
func processCycleNanos(int) (uint64, bool, error) { return 0, false, nil }
func threadCycleNanos(int) (uint64, bool)         { return 0, false }
