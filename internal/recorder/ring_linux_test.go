package recorder

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/perfring"
)

// fakeRing is a ring over ordinary memory, written by the test as the
// kernel would: records at data_head onwards, then data_head published.
type fakeRing struct {
	*ring
	data []byte
	meta *unix.PerfEventMmapPage
}

func newFakeRing(t testing.TB, dataPages int) fakeRing {
	t.Helper()
	page := os.Getpagesize()
	mem := make([]uint64, (1+dataPages)*page/8) // 8-byte aligned, as the kernel's page
	b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(mem)*8)
	rb, err := perfring.New(b)
	if err != nil {
		t.Fatal(err)
	}
	return fakeRing{ring: &ring{Ring: rb}, data: b[page:], meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&b[0]))}
}

// put writes a READ record of tid with count and time at absolute offset
// off (wrapping as the kernel does) and returns the offset after it.
func (r fakeRing) put(off uint64, tid uint32, count, at uint64) uint64 {
	rec := record(recordRead, 10, tid, uint32(count), uint32(count>>32), 10, tid, uint32(at), uint32(at>>32))
	for i, c := range rec {
		r.data[(off+uint64(i))%uint64(len(r.data))] = c
	}
	return off + uint64(len(rec))
}

func (r fakeRing) takeAll(since uint64) (tids []uint32) {
	r.drain(since, func(rec []byte) { tids = append(tids, binary.NativeEndian.Uint32(rec[12:])) })
	return tids
}

// Lap after lap of records of one type and length, each lap over the
// last at the same offsets: every record published is taken once. (The
// reader this replaced took a header equal to the last lap's for one not
// yet written, and lost whole laps once the buffer wrapped.)
func TestDrainLaps(t *testing.T) {
	r := newFakeRing(t, 1)
	size := uint64(len(r.data))
	since, now := bootNow()-1e9, bootNow()
	var off uint64
	tid := uint32(1)
	for lap := range 5 {
		want := 0
		// Three quarters of the buffer per drain: the laps fall at
		// every phase against the end, and records wrap around it.
		for end := off + size*3/4; off < end; want++ {
			off = r.put(off, tid, uint64(tid), now)
			tid++
		}
		r.meta.Data_head = off
		got := r.takeAll(since)
		if len(got) != want || r.meta.Data_tail != off || r.Corrupt() != 0 {
			t.Fatalf("lap %d: took %d of %d, tail %d of %d, corrupt %d", lap, len(got), want, r.meta.Data_tail, off, r.Corrupt())
		}
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1]+1 {
				t.Fatalf("lap %d: out of order: %v", lap, got)
			}
		}
	}
	if sum := r.readSum; sum != uint64(tid-1)*uint64(tid)/2 {
		t.Fatalf("readSum %d, want %d", sum, uint64(tid-1)*uint64(tid)/2)
	}
}

// Something that is not one of this recording's records (a type or length
// it never asks for, a time before its start) is counted, and the rest up
// to data_head skipped: never passed on, never read past data_head.
func TestDrainCorrupt(t *testing.T) {
	since, now := bootNow()-1e9, bootNow()
	r := newFakeRing(t, 1)
	off := r.put(0, 1, 100, now)
	copy(r.data[off:], []byte{99, 0, 0, 0, 0, 0, 40, 0})
	r.meta.Data_head = off + 40 + 40
	if got := r.takeAll(since); len(got) != 1 || r.Corrupt() != 1 || r.meta.Data_tail != r.meta.Data_head {
		t.Fatalf("bad type: took %v, corrupt %d, tail %d head %d", got, r.Corrupt(), r.meta.Data_tail, r.meta.Data_head)
	}
	r = newFakeRing(t, 1)
	off = r.put(0, 1, 100, since-1)
	r.meta.Data_head = off
	if got := r.takeAll(since); len(got) != 0 || r.Corrupt() != 1 {
		t.Fatalf("stamped before the recording: took %v, corrupt %d", got, r.Corrupt())
	}
	// A header claiming more than is published: not taken.
	r = newFakeRing(t, 1)
	off = r.put(0, 1, 100, now)
	r.meta.Data_head = off - 8
	if got := r.takeAll(since); len(got) != 0 || r.Corrupt() != 1 {
		t.Fatalf("past data_head: took %v, corrupt %d", got, r.Corrupt())
	}
}

// Whatever the buffer holds and wherever the kernel's head and the
// reader's tail stand (head at most a lap ahead, as the kernel keeps it),
// the reader neither panics nor passes a record it did not find whole
// inside the buffer, and its tail ends between where it was and the head.
func FuzzDrain(f *testing.F) {
	now := bootNow()
	ok := record(recordRead, 10, 11, 5, 0, 10, 11, uint32(now), uint32(now>>32))
	f.Add(ok, uint16(40), uint16(0))
	f.Add(append(ok, ok[:12]...), uint16(48), uint16(0))
	f.Add([]byte{7, 0, 0, 0, 0, 0, 48, 0}, uint16(8), uint16(4088))
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint16) {
		r := newFakeRing(t, 1)
		size := uint64(len(r.data))
		copy(r.data, data)
		start := uint64(tail) &^ 7
		r.meta.Data_tail = start
		r.meta.Data_head = start + uint64(head)&^7%size
		r.drain(now-1e9, func(rec []byte) {
			if len(rec) < 16 || uint64(len(rec)) > size {
				t.Fatalf("record of %d bytes", len(rec))
			}
		})
		if r.meta.Data_tail < start || r.meta.Data_tail > r.meta.Data_head {
			t.Fatalf("tail %d from %d (head %d)", r.meta.Data_tail, start, r.meta.Data_head)
		}
	})
}
