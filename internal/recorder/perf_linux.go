package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/perfring"
	"github.com/cputime/cputime/internal/procfs"
)

// Record types of the perf ring buffer (include/uapi/linux/perf_event.h);
// x/sys/unix lacks some.
const (
	recordComm        = 3
	recordExit        = 4
	recordFork        = 7
	recordRead        = 8
	recordSample      = 9
	recordLostSamples = 13
)

// ringKind says what a ring's counter is for. The recording opens two per
// online CPU, so that every ring buffer has one writer at a time:
//
//   - counts: a task-clock counter with inherit_stat. The only records it
//     writes are the READ records of exiting tasks, one per CPU's counter,
//     each from the CPU the task exits on, under the parent counter's
//     child_mutex (perf_event_exit_event), so that two exits never write
//     one buffer at once.
//   - events: a dummy counter that writes the FORK, COMM and EXIT records,
//     each into the buffer of the CPU it happens on (event_filter_match).
//
// One ring with both (what this recorder did before) has two writers: a
// READ record from a remote CPU and the buffer's own CPU's FORK or EXIT.
// The kernel's ring buffer expects one writer per buffer (its space is
// reserved with CPU-local atomics and its head published through a
// per-buffer nesting count), and two at once lose records, write them over
// each other, or stop publishing the head for good.
type ringKind int

const (
	ringCounts ringKind = iota
	ringEvents
)

// ring is one CPU's counter and its mmap'd ring buffer. Its Corrupt
// counts the records that did not look like this recording's (a type or
// length it never asks for, a time outside it): the rest of the buffer up
// to data_head was skipped. One writer per buffer makes this impossible;
// it is counted so that a kernel that proves otherwise is caught, not
// believed.
type ring struct {
	*perfring.Ring
	kind    ringKind
	fd      int
	readSum uint64 // the counts of the READ records that came through it
}

// counterAttr returns the attributes of one CPU's counter of kind.
// noSwitchFast asks the kernel (Linux 6.12 on) not to swap the counter
// contexts of two clone tasks at a switch between them (see Start).
func counterAttr(kind ringKind, noSwitchFast bool) unix.PerfEventAttr {
	attr := unix.PerfEventAttr{
		Type: unix.PERF_TYPE_SOFTWARE,
		// sample_id_all: pid, tid and time after every record.
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitInherit | unix.PerfBitSampleIDAll | unix.PerfBitUseClockID |
			unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv | unix.PerfBitWatermark,
		Clockid: unix.CLOCK_BOOTTIME,
	}
	switch kind {
	case ringCounts:
		// A counting counter: samples would cost (at 1 ms, 5% more CPU
		// for the workload, their interrupt time uncounted), and at
		// perf_event_paranoid 2 they cannot tell user from kernel mode.
		// Excluding the kernel (required there) does not change a
		// task-clock count.
		attr.Config = unix.PERF_COUNT_SW_TASK_CLOCK
		attr.Bits |= unix.PerfBitInheritStat
		if noSwitchFast {
			// inherit with PERF_SAMPLE_READ sets the context's
			// nr_no_switch_fast; a counting counter writes no sample,
			// so the records keep their layout.
			attr.Sample_type |= unix.PERF_SAMPLE_READ
		}
	case ringEvents:
		attr.Config = unix.PERF_COUNT_SW_DUMMY
		attr.Bits |= unix.PerfBitTask | unix.PerfBitComm
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	return attr
}

// errMlock is returned by openRing where the ring buffer's pages are over
// the mlock allowance (perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK).
var errMlock = errors.New("perf ring buffers over the mlock allowance (perf_event_mlock_kb, RLIMIT_MEMLOCK)")

// openRing opens the counter of kind on pid and cpu (inherited by every
// task pid creates; pid -1: every task on the CPU) and maps its ring
// buffer of dataPages pages (a power of two).
func openRing(pid, cpu, dataPages int, kind ringKind, noSwitchFast bool) (*ring, error) {
	attr := counterAttr(kind, noSwitchFast)
	if pid == -1 {
		attr.Bits &^= unix.PerfBitInherit // every task on the CPU: nothing to inherit
	}
	page := os.Getpagesize()
	// Wake the reader when a buffer is a quarter full, before the poll
	// interval ends (where it polls: the system-wide buffers; the
	// inherited ones it reads as pace sets).
	attr.Wakeup = uint32(dataPages * page / 4)
	fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("perf_event_open", err)
	}
	rb, err := perfring.Map(fd, dataPages)
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
			return nil, errMlock
		}
		return nil, err
	}
	return &ring{Ring: rb, kind: kind, fd: fd}, nil
}

func (r *ring) close() {
	r.Close()
	unix.Close(r.fd)
}

// drain passes each record published since the last drain to fn, in the
// order of the buffer (perfring.Ring.Read: a record that wraps around the
// end is a copy, valid until fn returns). Records stamped before since
// (CLOCK_BOOTTIME, the recording's start) or after now cannot be this
// recording's: such a record, or a type or length this recording never
// asks for, makes the rest up to data_head skipped and counted (Corrupt).
// The kernel's LOST records are counted by the ring (Lost).
func (r *ring) drain(since uint64, fn func(rec []byte)) {
	limit := bootNow() + uint64(time.Second)
	r.Read(func(rec []byte) bool {
		typ, n := binary.NativeEndian.Uint32(rec), uint64(len(rec))
		if !sizeFits(typ, n) {
			return false
		}
		if t := binary.NativeEndian.Uint64(rec[n-8:]); t < since || t > limit {
			return false
		}
		if typ == recordRead {
			r.readSum += binary.NativeEndian.Uint64(rec[16:])
		}
		fn(rec)
		return true
	})
}

// sizeFits says whether a record of type typ can be n bytes long with this
// recording's attributes: sample_id_all with TID and TIME (16 bytes after
// each record), read_format 0. Other types are not asked for.
func sizeFits(typ uint32, n uint64) bool {
	switch typ {
	case recordFork, recordExit:
		return n == 8+24+16
	case recordRead:
		return n == 8+16+16
	case recordLostSamples:
		return n == 8+8+16
	case recordComm:
		return n >= 8+8+8+16 && n <= 8+8+24+16 && n%8 == 0 // the name, NUL-ended, padded to 8
	}
	return false
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
