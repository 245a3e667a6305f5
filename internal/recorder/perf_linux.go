package recorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"time"
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
	// kernel wrote but never published, and corrupt the stretches skipped
	// where two writers wrote over each other (see drain).
	unpublished, corrupt uint64
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
// The kernel's buffer has one writer per CPU in mind: the space is
// reserved with a CPU-local cmpxchg, and data_head is published only when
// the outermost writer of the buffer finishes, counted by a plain
// per-buffer nesting counter (kernel/events/ring_buffer.c:
// __perf_output_begin, perf_output_get_handle, perf_output_put_handle).
// But a task's exit writes the READ record of each of its inherited
// counters, one per CPU, into that counter's buffer from the CPU it exits
// on (sync_child_event, perf_event_read_event), while that buffer's own CPU
// may be writing too. So, seen here with 1,000 threads exiting 8 at a time
// on 2 CPUs, in about one run in three:
//
//   - Two writers leave the nesting counter one too high (both read 2 and
//     store 1 on their way out): data_head never moves again, the records
//     go on being written after it, and no LOST record says so (its
//     publication is stuck too). A record written past data_head is taken
//     once data_head has stayed put for a whole drain since it was first
//     seen (a writer still under way publishes within microseconds), and
//     at the end (final), when the tree's tasks have exited; they are
//     counted in unpublished.
//   - Two writers reserve the same space and write over each other: a
//     record is lost, and when their lengths differ the next one starts
//     inside the survivor. A record that does not look like one of this
//     recording's (its type, length, time, ids) is skipped up to the next
//     that does; each such stretch is counted in corrupt.
//   - data_head is published before another CPU's record under it is
//     written. A record counts as written only when its last 8 bytes (its
//     time, from sample_id_all) differ from what the buffer held there
//     before, which the reader keeps (shadow): the data pages are
//     read-only, so they cannot be cleared instead.
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
	now := bootNow()
	tail = r.walk(tail, limit, since, now, func(off uint64, rec []byte) {
		fn(rec)
		if off >= head {
			r.unpublished++
		}
	})
	// What is written past data_head now: taken next time if data_head
	// stays put.
	r.seen = 0
	if tail >= head {
		r.seen = r.walk(tail, tail+size, since, now, nil)
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
}

// walk goes through the records written from offset off up to limit and
// returns the offset after the last. With fn set, it passes each to fn,
// keeps what it read in the shadow and counts the stretches it skipped;
// without, it only looks.
func (r *ring) walk(off, limit, since, now uint64, fn func(off uint64, rec []byte)) uint64 {
	for off < limit {
		rec, st := r.record(off, limit, since, now)
		if st == recordGarbage {
			// Skip to the next record that is one of ours.
			next := off + 8
			for ; next < limit; next += 8 {
				if _, st := r.record(next, limit, since, now); st == recordOK {
					break
				}
			}
			if next >= limit {
				return off // perhaps not written whole yet
			}
			if fn != nil {
				r.corrupt++
				r.remember(off, next)
			}
			off = next
			continue
		}
		if st != recordOK {
			return off
		}
		if fn != nil {
			fn(off, rec)
			r.remember(off, off+uint64(len(rec)))
		}
		off += uint64(len(rec))
	}
	return off
}

const (
	recordOK      = iota
	recordNotYet  // not written (whole) yet, or past limit
	recordGarbage // written, but not a record of this recording
)

// record returns the record at offset off if it is written whole, ends by
// limit, and looks like one of this recording's: a length its type can
// have, a time in [since, now] and, where a record names its task twice,
// the same task.
func (r *ring) record(off, limit, since, now uint64) ([]byte, int) {
	size := uint64(len(r.data))
	at := off % size
	// Records are 8-byte aligned, so the header never wraps.
	if bytes.Equal(r.data[at:at+8], r.shadow[at:at+8]) {
		return nil, recordNotYet
	}
	typ := binary.NativeEndian.Uint32(r.data[at:])
	n := uint64(binary.NativeEndian.Uint16(r.data[at+6:]))
	if !sizeFits(typ, n) {
		return nil, recordGarbage
	}
	if n > limit-off {
		return nil, recordNotYet
	}
	end := (at + n - 8) % size // the time, 8-byte aligned: never wraps
	if bytes.Equal(r.data[end:end+8], r.shadow[end:end+8]) {
		return nil, recordNotYet
	}
	var rec []byte
	if at+n <= size {
		rec = r.data[at : at+n]
	} else {
		r.scratch = append(append(r.scratch[:0], r.data[at:]...), r.data[:at+n-size]...)
		rec = r.scratch
	}
	t := binary.NativeEndian.Uint64(rec[n-8:])
	if t < since || t > now+uint64(time.Second) {
		return nil, recordGarbage
	}
	// READ and COMM: pid, tid of the task, then the sample_id's, of the
	// same task (the one writing: exiting, or renamed).
	if (typ == recordRead || typ == recordComm) && !bytes.Equal(rec[8:16], rec[n-16:n-8]) {
		return nil, recordGarbage
	}
	return rec, recordOK
}

// sizeFits says whether a record of type typ can be n bytes long with this
// recording's attributes: sample_id_all with TID and TIME (16 bytes after
// each record), read_format 0. Other types are not asked for.
func sizeFits(typ uint32, n uint64) bool {
	switch typ {
	case recordFork, recordExit:
		return n == 8+24+16
	case recordRead, recordLost:
		return n == 8+16+16
	case recordLostSamples:
		return n == 8+8+16
	case recordComm:
		return n >= 8+8+8+16 && n <= 8+8+24+16 && n%8 == 0 // the name, NUL-ended, padded to 8
	}
	return false
}

// remember copies what the buffer held from offset off to end into the
// shadow.
func (r *ring) remember(off, end uint64) {
	size := uint64(len(r.data))
	for off < end {
		at := off % size
		k := min(end-off, size-at)
		copy(r.shadow[at:at+k], r.data[at:at+k])
		off += k
	}
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
