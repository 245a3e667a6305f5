package recorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

// Record types of the perf ring buffer (include/uapi/linux/perf_event.h);
// x/sys/unix lacks some.
const (
	recordLost        = 2
	recordComm        = 3
	recordExit        = 4
	recordFork        = 7
	recordRead        = 8
	recordSample      = 9
	recordLostSamples = 13
	recordMax         = 32 // above every type the kernel writes today (21)
)

// ring is one CPU's counter and its mmap'd ring buffer.
type ring struct {
	fd      int
	mem     []byte
	meta    *unix.PerfEventMmapPage
	data    []byte
	scratch []byte // a record that wraps around the end of data
	readSum uint64 // the counts of the READ records that came through it

	// What the data held at each offset when last read (zeros at first):
	// a record whose last 8 bytes (its time) still equal it there has not
	// been written yet (see drain). The data pages are read-only (writing
	// them faults), so they cannot be cleared instead.
	shadow []byte
	// lastHead is data_head at the previous drain, and seen the end of the
	// records found written past it then (0: none).
	lastHead, seen uint64
	// unpublished counts the records taken from past data_head, which the
	// kernel wrote but never published (see drain).
	unpublished uint64
}

// openRing opens the task-clock counter of pid on cpu (inherited by every
// task pid creates) and maps its ring buffer of dataPages pages.
func openRing(pid, cpu, dataPages int, excludeKernel bool) (*ring, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_TASK_CLOCK,
		// A counting counter: the sample type only shapes sample_id (pid,
		// tid and time after every record). Samples would cost (at 1 ms,
		// 5% more CPU for the workload, and their interrupt time is not
		// counted), and at perf_event_paranoid 2 they cannot tell user
		// from kernel mode anyway. A sampling counter would also turn off
		// the switch shortcut that makes the counts exact (see
		// recorder_linux.go).
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitInherit | unix.PerfBitInheritStat | unix.PerfBitTask | unix.PerfBitComm |
			unix.PerfBitSampleIDAll | unix.PerfBitUseClockID,
		Clockid: unix.CLOCK_BOOTTIME,
	}
	if excludeKernel {
		attr.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("perf_event_open", err)
	}
	page := os.Getpagesize()
	for ; dataPages >= 8; dataPages /= 2 {
		mem, err := unix.Mmap(fd, 0, (1+dataPages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err == unix.EPERM || err == unix.ENOMEM {
			continue // over perf_event_mlock_kb and RLIMIT_MEMLOCK: try smaller
		}
		if err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("mmap perf ring buffer", err)
		}
		return &ring{fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0])), data: mem[page:],
			shadow: make([]byte, len(mem)-page)}, nil
	}
	unix.Close(fd)
	return nil, fmt.Errorf("mapping a perf ring buffer: %w", unix.EPERM)
}

func (r *ring) close() {
	unix.Munmap(r.mem)
	unix.Close(r.fd)
}

// drain passes each record written since the last drain to fn, in the
// order of the buffer, then gives the space back to the kernel. A record
// that wraps around the end of the buffer is passed as a copy. Records
// stamped before since (CLOCK_BOOTTIME, the recording's start) cannot be
// this recording's.
//
// The kernel's buffer has one writer per CPU in mind: it publishes
// data_head only when the outermost writer of the buffer finishes, counted
// by a plain, per-buffer nesting counter (kernel/events/ring_buffer.c,
// perf_output_get_handle and perf_output_put_handle; the reservation is a
// CPU-local cmpxchg). But a task's exit writes the READ record of each of
// its inherited counters, one per CPU, into that counter's buffer from the
// CPU it exits on (sync_child_event, perf_event_read_event), while that
// buffer's own CPU may be writing too. Two such writers can leave the
// counter one too high (both read 2 and store 1 on their way out): the
// buffer's data_head then never moves again, its records keep being
// written after it, and no LOST record says so (its publication is stuck
// too). They can also publish a head past a record the other CPU has not
// finished writing. So a record counts as written only when its last 8
// bytes (its time, from sample_id_all) differ from what was there before;
// and records found written past data_head are taken once data_head has
// not moved for a whole drain since they were first seen (a stuck buffer;
// a writer still under way publishes within microseconds), or at the end
// (final), when the tree's tasks have exited. They are counted in
// unpublished.
func (r *ring) drain(final bool, since uint64, fn func(rec []byte)) {
	head := atomic.LoadUint64(&r.meta.Data_head) // the kernel's store-release pairs with this load
	tail := r.meta.Data_tail
	size := uint64(len(r.data))
	limit := head
	switch {
	case final:
		limit = tail + size
	case head == r.lastHead && r.seen > head:
		limit = r.seen // seen written past data_head a drain ago, still unpublished
	}
	limit = max(limit, head)
	r.lastHead = head
	for tail < limit {
		rec, ok := r.written(tail, limit, head, since)
		if !ok {
			break
		}
		fn(rec)
		r.remember(tail, rec)
		if tail >= head {
			r.unpublished++
		}
		tail += uint64(len(rec))
	}
	// What is written past data_head now: taken next time if data_head
	// stays put.
	r.seen = 0
	if tail >= head {
		for end := tail; ; {
			rec, ok := r.written(end, tail+size, head, since)
			if !ok {
				break
			}
			end += uint64(len(rec))
			r.seen = end
		}
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
}

// written returns the record at offset off if the kernel has written it
// whole and it ends by limit. Past head (unpublished) it must also look
// like a record of this recording: a known type and a time in [since, now].
func (r *ring) written(off, limit, head, since uint64) ([]byte, bool) {
	size := uint64(len(r.data))
	at := off % size
	// Records are 8-byte aligned, so the header never wraps.
	typ := binary.NativeEndian.Uint32(r.data[at:])
	n := uint64(binary.NativeEndian.Uint16(r.data[at+6:]))
	if n < 16 || n%8 != 0 || n > limit-off {
		return nil, false
	}
	end := (at + n - 8) % size // the time, 8-byte aligned: never wraps
	if bytes.Equal(r.data[end:end+8], r.shadow[end:end+8]) {
		return nil, false // not written yet
	}
	if off >= head {
		t := binary.NativeEndian.Uint64(r.data[end:])
		if typ == 0 || typ > recordMax || t < since || t > bootNow() {
			return nil, false
		}
	}
	if at+n <= size {
		return r.data[at : at+n], true
	}
	r.scratch = append(append(r.scratch[:0], r.data[at:]...), r.data[:at+n-size]...)
	return r.scratch, true
}

// remember copies a record taken from offset off into the shadow.
func (r *ring) remember(off uint64, rec []byte) {
	at := off % uint64(len(r.shadow))
	k := copy(r.shadow[at:], rec)
	copy(r.shadow, rec[k:])
}

// onlineCPUs returns the ids of the online CPUs (/sys/devices/system/cpu/online,
// "0-3,5"), or 0..NumCPU-1 where the file is missing.
func onlineCPUs(ncpu int) []int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err == nil {
		if cpus, err := procfs.ParseCPUList(string(b)); err == nil {
			return cpus
		}
	}
	cpus := make([]int, ncpu)
	for c := range cpus {
		cpus[c] = c
	}
	return cpus
}

// total reads the counter's own count: its own (the original counter's
// task's) plus every inherited counter's, exited or running.
func (r *ring) total() (uint64, error) {
	var b [8]byte
	n, err := unix.Read(r.fd, b[:])
	if err != nil {
		return 0, os.NewSyscallError("read perf counter", err)
	}
	if n != 8 {
		return 0, fmt.Errorf("reading a perf counter: %d bytes", n)
	}
	return binary.NativeEndian.Uint64(b[:]), nil
}
