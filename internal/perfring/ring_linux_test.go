package perfring

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing is a ring over ordinary memory, written by the test as the
// kernel writes one: records from data_head on, then data_head published.
func fakeRing(t testing.TB, dataPages int) *Ring {
	t.Helper()
	page := os.Getpagesize()
	mem := make([]uint64, (1+dataPages)*page/8) // 8-byte aligned, as a mapping
	r, err := New(unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(mem)*8))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// record is a record of type typ and the given 8-byte words after its
// header.
func record(typ uint32, words ...uint64) []byte {
	b := binary.NativeEndian.AppendUint32(nil, typ)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint16(b, uint16(8+8*len(words)))
	for _, w := range words {
		b = binary.NativeEndian.AppendUint64(b, w)
	}
	return b
}

// put writes rec at absolute offset off, wrapping as the kernel does, and
// returns the offset after it.
func (r *Ring) put(off uint64, rec []byte) uint64 {
	for i, c := range rec {
		r.data[(off+uint64(i))%uint64(len(r.data))] = c
	}
	return off + uint64(len(rec))
}

func (r *Ring) publish(head uint64) { r.meta.Data_head = head }

// readAll returns the first word of each record Read passes on.
func (r *Ring) readAll() (got []uint64) {
	r.Read(func(rec []byte) bool {
		got = append(got, binary.NativeEndian.Uint64(rec[8:]))
		return true
	})
	return got
}

// Lap after lap over the same memory, records of three lengths falling at
// every phase against the buffer's end: each record published is passed
// on once, whole and in order, and the tail follows the head.
func TestReadLaps(t *testing.T) {
	r := fakeRing(t, 1)
	size := uint64(len(r.data))
	var off, next uint64
	for lap := range 7 {
		var want []uint64
		for end := off + size*3/4; off < end; next++ {
			words := []uint64{next, ^next, next * 3}[:1+next%3]
			off = r.put(off, record(9, words...))
			want = append(want, next)
		}
		r.publish(off)
		got := r.readAll()
		if len(got) != len(want) || r.meta.Data_tail != off || r.Corrupt() != 0 || r.Used() != 0 {
			t.Fatalf("lap %d: passed %d of %d, tail %d of %d, corrupt %d", lap, len(got), len(want), r.meta.Data_tail, off, r.Corrupt())
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("lap %d: record %d carries %d, want %d", lap, i, got[i], want[i])
			}
		}
	}
}

// A LOST record is counted, not passed on; the records around it are.
func TestReadLost(t *testing.T) {
	r := fakeRing(t, 1)
	off := r.put(0, record(9, 1))
	off = r.put(off, record(recordLost, 77, 5))
	off = r.put(off, record(9, 2))
	off = r.put(off, record(recordLost, 77, 3))
	r.publish(off)
	if got := r.readAll(); len(got) != 2 || got[0] != 1 || got[1] != 2 || r.Lost() != 8 {
		t.Fatalf("passed %v, lost %d; want [1 2], 8", got, r.Lost())
	}
}

// A header the kernel could not have written, or a record the caller
// refuses, ends the read: the rest up to data_head is skipped and counted,
// never passed on, never read past data_head.
func TestReadCorrupt(t *testing.T) {
	for _, tt := range []struct {
		name string
		bad  []byte
	}{
		{"shorter than a header", []byte{9, 0, 0, 0, 0, 0, 4, 0}},
		{"not a multiple of 8", []byte{9, 0, 0, 0, 0, 0, 12, 0, 1, 2, 3, 4, 0, 0, 0, 0}},
		{"past data_head", []byte{9, 0, 0, 0, 0, 0, 64, 0}},
		{"refused", record(99, 3)},
	} {
		r := fakeRing(t, 1)
		off := r.put(0, record(9, 1))
		off = r.put(off, tt.bad)
		head := r.put(off, record(9, 2))
		r.publish(head)
		var got []uint64
		r.Read(func(rec []byte) bool {
			if binary.NativeEndian.Uint32(rec) == 99 {
				return false
			}
			got = append(got, binary.NativeEndian.Uint64(rec[8:]))
			return true
		})
		if len(got) != 1 || got[0] != 1 || r.Corrupt() != 1 || r.meta.Data_tail != head {
			t.Errorf("%s: passed %v, corrupt %d, tail %d, head %d", tt.name, got, r.Corrupt(), r.meta.Data_tail, head)
		}
	}
}

// Whatever the buffer holds and wherever the head and tail stand (the head
// at most a lap ahead, as the kernel keeps it), Read never panics, passes
// only records it found whole below data_head, and leaves the tail between
// where it was and the head.
func FuzzRead(f *testing.F) {
	f.Add(record(9, 1, 2), uint16(24), uint16(0))
	f.Add(append(record(9, 1), record(recordLost, 1, 2)...), uint16(40), uint16(4080))
	f.Add([]byte{7, 0, 0, 0, 0, 0, 48, 0}, uint16(8), uint16(4088))
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint16) {
		r := fakeRing(t, 1)
		size := uint64(len(r.data))
		copy(r.data, data)
		start := uint64(tail) &^ 7
		r.meta.Data_tail = start
		r.publish(start + uint64(head)&^7%size)
		r.Read(func(rec []byte) bool {
			n := uint64(binary.NativeEndian.Uint16(rec[6:]))
			if len(rec) < 8 || uint64(len(rec)) != n || n > r.meta.Data_head-start {
				t.Fatalf("record of %d bytes, header says %d", len(rec), n)
			}
			return rec[0] != 0xff
		})
		if r.meta.Data_tail < start || r.meta.Data_tail > r.meta.Data_head {
			t.Fatalf("tail %d from %d (head %d)", r.meta.Data_tail, start, r.meta.Data_head)
		}
	})
}

// A real ring of one data page, read as it fills and wraps: the thread's
// context-switch records (PERF_RECORD_SWITCH, one switch-out per switch)
// number as many as getrusage(RUSAGE_THREAD) counts switches, voluntary
// and not, over the same span.
func TestReadSwitchesAgreeWithRusage(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv |
			unix.PerfBitSampleIDAll | unix.PerfBitContextSwitch,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("no context-switch records here (perf_event_paranoid?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	r, err := Map(fd, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tid := uint32(unix.Gettid())
	var outs, ins int
	read := func() {
		r.Read(func(rec []byte) bool {
			typ, misc := binary.NativeEndian.Uint32(rec), binary.NativeEndian.Uint16(rec[4:])
			if typ != unix.PERF_RECORD_SWITCH || len(rec) != 8+16 || binary.NativeEndian.Uint32(rec[12:]) != tid {
				return false
			}
			if misc&unix.PERF_RECORD_MISC_SWITCH_OUT != 0 {
				outs++
			} else {
				ins++
			}
			return true
		})
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &before)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	// 24-byte records in 4 KiB: each round's (two per sleep, and any
	// preemption) fill a third of it, so it wraps every few rounds.
	for range 20 {
		for range 30 {
			time.Sleep(20 * time.Microsecond)
		}
		read()
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0); err != nil {
		t.Fatal(err)
	}
	unix.Getrusage(unix.RUSAGE_THREAD, &after)
	read()
	switches := int(after.Nvcsw-before.Nvcsw) + int(after.Nivcsw-before.Nivcsw)
	t.Logf("switch-out records %d, switch-in %d; getrusage: %d switches; lost %d, corrupt %d", outs, ins, switches, r.Lost(), r.Corrupt())
	if r.Lost() != 0 || r.Corrupt() != 0 {
		t.Fatalf("lost %d, corrupt %d: the ring was read before it filled, by its one writer", r.Lost(), r.Corrupt())
	}
	// getrusage also counts a switch between its reading and the enable
	// (or the disable and its reading): a preemption there, at most one
	// each.
	if outs < 300 || outs > switches || switches-outs > 2 {
		t.Errorf("%d switch-out records, getrusage counts %d switches: want at least 300 (one per sleep, 600 sleeps), and equal within the two calls' span", outs, switches)
	}
}
