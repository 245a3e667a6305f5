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
