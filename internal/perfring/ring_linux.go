package perfring

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recordLost is PERF_RECORD_LOST (include/uapi/linux/perf_event.h): a
// header, the event id (u64) and the number of records dropped (u64).
const (
	recordLost    = 2
	headerSize    = 8
	lostCountOff  = headerSize + 8
	lostRecordLen = lostCountOff + 8
)

// Ring is the reader's side of one perf event's ring buffer. A Ring is
// read by one goroutine at a time.
type Ring struct {
	mem     []byte // what Map mapped, nil for a ring over memory of the caller's
	meta    *unix.PerfEventMmapPage
	data    []byte
	scratch []byte // a record that wraps around the end of data
	lost    uint64
	corrupt uint64
}

// Map maps the ring buffer of the perf event fd, of dataPages data pages
// (a power of two), writable: the kernel then never overwrites what is not
// read yet. Errors keep mmap's errno (EPERM or ENOMEM: over the mlock
// allowance, perf_event_mlock_kb then RLIMIT_MEMLOCK).
func Map(fd, dataPages int) (*Ring, error) {
	if dataPages <= 0 || dataPages&(dataPages-1) != 0 {
		return nil, fmt.Errorf("mapping a perf ring buffer: %d data pages, not a power of two", dataPages)
	}
	mem, err := unix.Mmap(fd, 0, (1+dataPages)*os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, os.NewSyscallError("mmap perf ring buffer", err)
	}
	r, err := New(mem)
	if err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	r.mem = mem
	return r, nil
}

// New returns the reader of a ring laid out in mem as the kernel lays out
// a perf event's mapping: the metadata page, then the data pages (where
// the metadata page says, or from the second page on for kernels before
// 4.1, which do not say). mem must be 8-byte aligned, as a mapping is.
// Close does not unmap memory New was given.
func New(mem []byte) (*Ring, error) {
	page := os.Getpagesize()
	if len(mem) < 2*page || uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return nil, fmt.Errorf("a perf ring buffer of %d bytes: at least 2 pages, 8-byte aligned", len(mem))
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := uint64(page), uint64(len(mem)-page)
	if meta.Data_size != 0 {
		off, size = meta.Data_offset, meta.Data_size
	}
	if off > uint64(len(mem)) || size > uint64(len(mem))-off || size%headerSize != 0 || size == 0 {
		return nil, fmt.Errorf("a perf ring buffer's data at %d, %d bytes, outside its %d", off, size, len(mem))
	}
	return &Ring{meta: meta, data: mem[off : off+size]}, nil
}

// Read passes each record published since the last Read to fn, in the
// order of the buffer, then gives the space back to the kernel. rec is
// the whole record, header included; it points into the buffer, or into a
// copy where it wraps around the end, and is valid until fn returns. fn
// returns false for a record that cannot be its reader's: that record and
// the rest up to data_head are skipped and counted (Corrupt).
// PERF_RECORD_LOST records are counted (Lost), not passed on.
func (r *Ring) Read(fn func(rec []byte) bool) {
	head := atomic.LoadUint64(&r.meta.Data_head) // load-acquire: pairs with the kernel's store-release
	tail := atomic.LoadUint64(&r.meta.Data_tail) // ours alone
	size := uint64(len(r.data))
	for tail < head {
		at := tail % size
		// Records are 8-byte multiples and the data a multiple of 8: a
		// header never wraps.
		typ := binary.NativeEndian.Uint32(r.data[at:])
		n := uint64(binary.NativeEndian.Uint16(r.data[at+6:]))
		if n < headerSize || n%headerSize != 0 || n > head-tail {
			r.corrupt++
			tail = head
			break
		}
		var rec []byte
		if at+n <= size {
			rec = r.data[at : at+n]
		} else {
			r.scratch = append(append(r.scratch[:0], r.data[at:]...), r.data[:at+n-size]...)
			rec = r.scratch
		}
		if typ == recordLost && n >= lostRecordLen {
			r.lost += binary.NativeEndian.Uint64(rec[lostCountOff:])
		} else if !fn(rec) {
			r.corrupt++
			tail = head
			break
		}
		tail += n
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail) // store-release: the space is the kernel's again
}

// Lost returns the number of records the kernel dropped for want of room,
// by the PERF_RECORD_LOST records read so far.
func (r *Ring) Lost() uint64 { return r.lost }

// Corrupt returns how many times Read skipped the rest of the buffer: at a
// header the kernel could not have written, or a record fn refused.
func (r *Ring) Corrupt() uint64 { return r.corrupt }

// Used returns how many bytes of records the buffer holds, not yet read.
func (r *Ring) Used() uint64 {
	return atomic.LoadUint64(&r.meta.Data_head) - atomic.LoadUint64(&r.meta.Data_tail)
}

// Close unmaps the buffer Map mapped. The event's descriptor is the
// caller's to close.
func (r *Ring) Close() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem, r.data, r.meta = nil, nil, nil
	return err
}
