//go:build !windows

package win32

import (
	"errors"
	"sync"
	"unicode/utf16"
	"unsafe"

	"github.com/cputime/cputime"
)

// snapshot is a Toolhelp snapshot: the entries listed when it was taken,
// and one cursor per kind that First resets and Next advances.
type snapshot struct {
	mu        sync.Mutex
	closed    bool
	threads   []ThreadEntry32
	processes []ProcessEntry32
	nextT     int
	nextP     int
}

func (s *snapshot) close() {
	s.mu.Lock()
	s.closed = true
	s.threads, s.processes = nil, nil
	s.mu.Unlock()
}

// Base priority of a normal thread in a normal process (NORMAL_PRIORITY_CLASS,
// THREAD_PRIORITY_NORMAL), reported for every entry.
const normalPriority = 8

// CreateToolhelp32Snapshot lists the system's threads (TH32CS_SNAPTHREAD,
// through cputime.AllThreads) and processes (TH32CS_SNAPPROCESS, through
// cputime.Processes) as they are at the time of the call; Thread32First
// and Thread32Next, Process32First and Process32Next then walk the lists.
// As on Windows, a thread snapshot holds every thread of the system,
// whatever processId says, and processId is ignored for processes too;
// other flags (modules, heaps) add nothing, since this package has no
// calls to walk them. Processes and threads that exit during the listing
// are left out, and so are processes the caller may not read (/proc
// mounted with hidepid). On failure it returns InvalidHandle.
func CreateToolhelp32Snapshot(flags uint32, processId uint32) (handle Handle, err error) {
	s := new(snapshot)
	if flags&TH32CS_SNAPTHREAD != 0 {
		for info, err := range cputime.AllThreads() {
			if skipEntry(err) {
				continue
			}
			if err != nil {
				return InvalidHandle, errnoOf(err)
			}
			s.threads = append(s.threads, ThreadEntry32{
				Size:           uint32(unsafe.Sizeof(ThreadEntry32{})),
				ThreadID:       uint32(info.ID),
				OwnerProcessID: uint32(info.ProcessID),
				BasePri:        normalPriority,
			})
		}
	}
	if flags&TH32CS_SNAPPROCESS != 0 {
		for info, err := range cputime.Processes() {
			if skipEntry(err) {
				continue
			}
			if err != nil {
				return InvalidHandle, errnoOf(err)
			}
			e := ProcessEntry32{
				Size:            uint32(unsafe.Sizeof(ProcessEntry32{})),
				ProcessID:       uint32(info.ID),
				Threads:         uint32(info.Threads),
				ParentProcessID: uint32(info.ParentID),
				PriClassBase:    normalPriority,
			}
			name := utf16.Encode([]rune(info.Name))
			copy(e.ExeFile[:len(e.ExeFile)-1], name) // the last stays NUL
			s.processes = append(s.processes, e)
		}
	}
	return addHandle(&object{snapshot: s}), nil
}

// skipEntry reports whether an error of an enumeration concerns one entry
// that is gone or hidden, rather than the whole listing.
func skipEntry(err error) bool {
	return err != nil && (errors.Is(err, cputime.ErrNotFound) || errors.Is(err, cputime.ErrAccessDenied))
}

func lookupSnapshot(h Handle) (*snapshot, error) {
	if o := lookup(h); o != nil && o.snapshot != nil {
		return o.snapshot, nil
	}
	return nil, ERROR_INVALID_HANDLE
}

// Thread32First copies the first thread of a snapshot into threadEntry.
// threadEntry.Size must be at least unsafe.Sizeof(ThreadEntry32{}), else
// the call fails with ERROR_BAD_LENGTH, as on Windows. A snapshot without
// threads fails with ERROR_NO_MORE_FILES.
func Thread32First(snapshot Handle, threadEntry *ThreadEntry32) (err error) {
	return threadEntryAt(snapshot, threadEntry, true)
}

// Thread32Next copies the next thread of a snapshot into threadEntry, and
// fails with ERROR_NO_MORE_FILES after the last one.
func Thread32Next(snapshot Handle, threadEntry *ThreadEntry32) (err error) {
	return threadEntryAt(snapshot, threadEntry, false)
}

// Process32First copies the first process of a snapshot into procEntry,
// with the Size check and errors of Thread32First.
func Process32First(snapshot Handle, procEntry *ProcessEntry32) (err error) {
	return processEntryAt(snapshot, procEntry, true)
}

// Process32Next copies the next process of a snapshot into procEntry, and
// fails with ERROR_NO_MORE_FILES after the last one.
func Process32Next(snapshot Handle, procEntry *ProcessEntry32) (err error) {
	return processEntryAt(snapshot, procEntry, false)
}

// snapshotEntry copies entry next (or the first, if first) of the list
// that pick selects from snapshot h into e, whose Size field size gives.
func snapshotEntry[E any](h Handle, e *E, size func(*E) uint32, first bool, pick func(*snapshot) (list []E, next *int)) error {
	s, err := lookupSnapshot(h)
	if err != nil {
		return err
	}
	if e == nil {
		return ERROR_NOACCESS
	}
	if size(e) < uint32(unsafe.Sizeof(*e)) {
		return ERROR_BAD_LENGTH
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ERROR_INVALID_HANDLE
	}
	list, next := pick(s)
	if first {
		*next = 0
	}
	if *next >= len(list) {
		return ERROR_NO_MORE_FILES
	}
	*e = list[*next]
	*next++
	return nil
}

func threadEntryAt(h Handle, te *ThreadEntry32, first bool) error {
	return snapshotEntry(h, te, func(te *ThreadEntry32) uint32 { return te.Size }, first,
		func(s *snapshot) ([]ThreadEntry32, *int) { return s.threads, &s.nextT })
}

func processEntryAt(h Handle, pe *ProcessEntry32, first bool) error {
	return snapshotEntry(h, pe, func(pe *ProcessEntry32) uint32 { return pe.Size }, first,
		func(s *snapshot) ([]ProcessEntry32, *int) { return s.processes, &s.nextP })
}
