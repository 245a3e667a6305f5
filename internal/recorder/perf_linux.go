package recorder

import (
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
)

// ring is one CPU's counter and its mmap'd ring buffer.
type ring struct {
	fd      int
	mem     []byte
	meta    *unix.PerfEventMmapPage
	data    []byte
	scratch []byte // a record that wraps around the end of data
	readSum uint64 // the counts of the READ records that came through it
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
		return &ring{fd: fd, mem: mem, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0])), data: mem[page:]}, nil
	}
	unix.Close(fd)
	return nil, fmt.Errorf("mapping a perf ring buffer: %w", unix.EPERM)
}

func (r *ring) close() {
	unix.Munmap(r.mem)
	unix.Close(r.fd)
}

// drain passes each record written since the last drain to fn, then gives
// the space back to the kernel. A record that wraps around the end of the
// buffer is passed as a copy.
func (r *ring) drain(fn func(rec []byte)) {
	head := atomic.LoadUint64(&r.meta.Data_head) // the kernel's store-release pairs with this load
	tail := r.meta.Data_tail
	size := uint64(len(r.data))
	for tail < head {
		off := tail % size
		// Records are 8-byte aligned, so the header never wraps.
		n := uint64(binary.NativeEndian.Uint16(r.data[off+6:]))
		if n < 8 || n > head-tail {
			break // cannot happen with a sane kernel; stop rather than loop
		}
		var rec []byte
		if off+n <= size {
			rec = r.data[off : off+n]
		} else {
			r.scratch = append(append(r.scratch[:0], r.data[off:]...), r.data[:off+n-size]...)
			rec = r.scratch
		}
		fn(rec)
		tail += n
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
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
