package cputime

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// Enumerations read one snapshot of the whole system:
// NtQuerySystemInformation(SystemProcessInformation) fills a buffer with a
// record per process (SYSTEM_PROCESS_INFORMATION), each followed by a record
// per thread (SYSTEM_THREAD_INFORMATION), every one with its times. One call
// answers what a Toolhelp snapshot plus an OpenThread and GetThreadTimes per
// thread would, in one consistent instant, and needs no right on any task:
// nothing the caller asked for is dropped because a handle was refused.
// Only the Idle "process" (id 0), the idle time of the processors rather
// than a process (IdleProcessorCycleTimes answers for it), is left out.

const (
	processRecordSize = int(unsafe.Sizeof(winapi.SYSTEM_PROCESS_INFORMATION{}))
	threadRecordSize  = int(unsafe.Sizeof(winapi.SYSTEM_THREAD_INFORMATION{}))

	// threadTerminated is KTHREAD_STATE Terminated: an exited thread whose
	// object lives on while handles to it are open. It is not listed.
	threadTerminated = 4

	maxSnapshot = 1 << 30 // give up growing the buffer past this
)

// snapshotSize is the size of the last snapshot's buffer: the next one
// starts there, and usually needs a single call.
var snapshotSize atomic.Int64

// snapshot is one answer of NtQuerySystemInformation(SystemProcessInformation).
type snapshot struct {
	buf   []byte    // backed by words: the records are 8-byte aligned
	words *[]uint64 // given back by release
}

// snapshotBufs keeps snapshot buffers from one call to the next: a program
// that lists threads every few milliseconds (goroutines' sampler, top, the
// exporter) would otherwise allocate a buffer as large as every process
// and thread on the machine each time.
var snapshotBufs sync.Pool // of *[]uint64

func snapshotWords(n int) *[]uint64 {
	if w, _ := snapshotBufs.Get().(*[]uint64); w != nil && cap(*w) >= n {
		*w = (*w)[:n]
		return w
	}
	w := make([]uint64, n)
	return &w
}

// release gives the snapshot's buffer back for a later snapshot: nothing
// read from s may be used after it (names are copied out).
func (s snapshot) release() {
	if s.words != nil {
		snapshotBufs.Put(s.words)
	}
}

func takeSnapshot() (snapshot, error) {
	size := int(snapshotSize.Load())
	if size == 0 {
		size = 256 << 10
	}
	for {
		words := snapshotWords((size + 7) / 8)
		buf := unsafe.Slice((*byte)(unsafe.Pointer(&(*words)[0])), len(*words)*8)
		var need uint32
		err := windows.NtQuerySystemInformation(windows.SystemProcessInformation, unsafe.Pointer(&buf[0]), uint32(len(buf)), &need)
		if err == nil {
			snapshotSize.Store(int64(len(buf)))
			if need != 0 && int(need) < len(buf) {
				buf = buf[:need]
			}
			return snapshot{buf: buf, words: words}, nil
		}
		snapshotBufs.Put(words)
		var status windows.NTStatus
		if !errors.As(err, &status) || (status != windows.STATUS_INFO_LENGTH_MISMATCH && status != windows.STATUS_BUFFER_TOO_SMALL) {
			if errors.As(err, &status) {
				err = status.Errno()
			}
			return snapshot{}, fmt.Errorf("listing processes: %w", winError("NtQuerySystemInformation", err))
		}
		// Processes come and go between calls: leave room for more.
		next := max(int(need)+int(need)/4, 2*size)
		if next > maxSnapshot {
			return snapshot{}, fmt.Errorf("listing processes: %w", winError("NtQuerySystemInformation", status.Errno()))
		}
		size = next
	}
}

// process is one process record of a snapshot, with its thread records.
type process struct {
	rec     *winapi.SYSTEM_PROCESS_INFORMATION
	threads []winapi.SYSTEM_THREAD_INFORMATION
}

// processes returns the snapshot's process records, sorted by id, the
// Idle process left out. A record that does not fit in the buffer ends the
// walk: the buffer is the system's, but never read past its end.
func (s snapshot) processes() []process {
	var list []process
	for off := 0; off+processRecordSize <= len(s.buf); {
		rec := (*winapi.SYSTEM_PROCESS_INFORMATION)(unsafe.Pointer(&s.buf[off]))
		n := int(rec.NumberOfThreads)
		start := off + processRecordSize
		if n > (len(s.buf)-start)/threadRecordSize {
			break
		}
		p := process{rec: rec}
		if n > 0 {
			p.threads = unsafe.Slice((*winapi.SYSTEM_THREAD_INFORMATION)(unsafe.Pointer(&s.buf[start])), n)
		}
		if rec.UniqueProcessID != 0 {
			list = append(list, p)
		}
		if rec.NextEntryOffset == 0 {
			break
		}
		off += int(rec.NextEntryOffset)
	}
	slices.SortFunc(list, func(a, b process) int { return cmp.Compare(a.rec.UniqueProcessID, b.rec.UniqueProcessID) })
	return list
}

// find returns the record of process pid.
func (s snapshot) find(pid int) (process, error) {
	for _, p := range s.processes() {
		if int(p.rec.UniqueProcessID) == pid {
			return p, nil
		}
	}
	return process{}, fmt.Errorf("%w: not in the system's process list", ErrNotFound)
}

// name returns the process's image name, which the system writes into the
// snapshot's buffer: it is read only from there.
func (s snapshot) name(p process) string {
	length := int(p.rec.ImageName.Length) / 2
	// The address as a number: it is never held as a pointer.
	addr := *(*uintptr)(unsafe.Pointer(&p.rec.ImageName.Buffer))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s.buf)))
	if length == 0 || 2*length > len(s.buf) || addr < base || addr-base > uintptr(len(s.buf)-2*length) || (addr-base)%2 != 0 {
		return ""
	}
	off := int(addr - base)
	return windows.UTF16ToString(unsafe.Slice((*uint16)(unsafe.Pointer(&s.buf[off])), length))
}

// ticksInstant converts a FILETIME instant held as an int64.
func ticksInstant(ft int64) time.Time {
	if ft <= 0 {
		return time.Time{}
	}
	return Filetime(ft).Time().Local()
}

// ticksAmount converts an amount of 100 ns ticks held as an int64.
func ticksAmount(ticks int64) time.Duration {
	if ticks <= 0 {
		return 0
	}
	return time.Duration(ticks) * nanosecondsPerTick
}

// live returns the threads of p that have not exited, sorted by id.
func (p process) live() []winapi.SYSTEM_THREAD_INFORMATION {
	var live []winapi.SYSTEM_THREAD_INFORMATION
	for _, t := range p.threads {
		if t.ThreadState != threadTerminated {
			live = append(live, t)
		}
	}
	slices.SortFunc(live, func(a, b winapi.SYSTEM_THREAD_INFORMATION) int {
		return cmp.Compare(a.ClientId.UniqueThread, b.ClientId.UniqueThread)
	})
	return live
}

func (s snapshot) processInfo(p process) ProcessInfo {
	live := 0
	for _, t := range p.threads {
		if t.ThreadState != threadTerminated {
			live++
		}
	}
	return ProcessInfo{
		ID:       int(p.rec.UniqueProcessID),
		ParentID: int(p.rec.InheritedFromUniqueProcessID),
		Name:     s.name(p),
		Threads:  live,
		Cycles:   p.rec.CycleTime,
		Times: Times{
			Creation: ticksInstant(p.rec.CreateTime),
			Kernel:   ticksAmount(p.rec.KernelTime),
			User:     ticksAmount(p.rec.UserTime),
		},
	}
}

// yieldThreads yields the live threads of p; false if yield asked to stop.
func yieldThreads(p process, yield func(ThreadInfo, error) bool) bool {
	pid := int(p.rec.UniqueProcessID)
	for _, t := range p.live() {
		info := ThreadInfo{
			ID:        int(t.ClientId.UniqueThread),
			ProcessID: pid,
			Times: Times{
				Creation: ticksInstant(t.CreateTime),
				Kernel:   ticksAmount(t.KernelTime),
				User:     ticksAmount(t.UserTime),
			},
		}
		if !yield(info, nil) {
			return false
		}
	}
	return true
}

func threads(pid int, yield func(ThreadInfo, error) bool) {
	s, err := takeSnapshot()
	if err != nil {
		yield(ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", pid, err))
		return
	}
	defer s.release()
	p, err := s.find(pid)
	if err != nil {
		yield(ThreadInfo{}, fmt.Errorf("listing threads of process %d: %w", pid, err))
		return
	}
	yieldThreads(p, yield)
}

func allThreads(yield func(ThreadInfo, error) bool) {
	s, err := takeSnapshot()
	if err != nil {
		yield(ThreadInfo{}, err)
		return
	}
	defer s.release()
	for _, p := range s.processes() {
		if !yieldThreads(p, yield) {
			return
		}
	}
}

func processes(yield func(ProcessInfo, error) bool) {
	s, err := takeSnapshot()
	if err != nil {
		yield(ProcessInfo{}, err)
		return
	}
	defer s.release()
	for _, p := range s.processes() {
		if !yield(s.processInfo(p), nil) {
			return
		}
	}
}

func processInfoOf(pid int) (ProcessInfo, error) {
	s, err := takeSnapshot()
	if err != nil {
		return ProcessInfo{}, err
	}
	defer s.release()
	p, err := s.find(pid)
	if err != nil {
		return ProcessInfo{}, err
	}
	return s.processInfo(p), nil
}
