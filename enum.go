package cputime

import (
	"fmt"
	"iter"
)

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
	// QueryProcessCycleTime counts it. On Windows it is the CycleTime of
	// the system's process snapshot (SYSTEM_PROCESS_INFORMATION), the
	// kernel's own count; 0 where the system does not fill it in (Wine). On
	// Linux it is Times.Total() × ReferenceFrequency, what ProcessCycleTime
	// returns for the same total; the first enumeration finds the frequency
	// (which may cost a calibration, once per process), and Cycles is 0
	// where there is none (ReferenceFrequency fails).
	Cycles uint64
}

// Threads returns the threads of process pid, with their times, as an
// iterator, like a Toolhelp snapshot walked with Thread32First/Thread32Next
// plus GetThreadTimes on each entry. A thread that exits during the scan is
// skipped. On Linux the kernel's listing of /proc/PID/task can leave out
// a thread alive throughout when others exit while it runs, so the scan
// lists it again, up to 3 times, while threads came or went. If the process
// cannot be read, the iterator yields one error (wrapping ErrNotFound or
// ErrAccessDenied) and stops.
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

// Threads returns the live threads of the handle's process, with their
// times, as the package-level Threads does for its id; nothing once the
// process has exited. The list is the handle's process's, never a
// successor's that reused its id: it is kept only if the process was still
// there (running, or exited but not yet reaped, which keeps its id) after
// it was read. It needs ProcessQueryLimitedInformation.
func (p *Process) Threads() iter.Seq2[ThreadInfo, error] {
	return func(yield func(ThreadInfo, error) bool) {
		var list []ThreadInfo
		var listErr error
		threads(p.pid, func(info ThreadInfo, err error) bool {
			if err != nil {
				listErr = err
				return false
			}
			list = append(list, info)
			return true
		})
		// After the listing: if the process is still there, the id was
		// its own throughout, and the threads listed were its threads.
		t, err := p.Times()
		switch {
		case err != nil:
			yield(ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", p.pid, err))
			return
		case t.ExitSource != ExitNone:
			return // exited: no live threads, and the id may be another's
		case listErr != nil:
			yield(ThreadInfo{}, listErr)
			return
		}
		for _, info := range list {
			if !yield(info, nil) {
				return
			}
		}
	}
}
