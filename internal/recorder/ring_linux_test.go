package recorder

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing is a ring over ordinary memory, written by the test as the
// kernel would: records at data_head onwards, data_head published or not.
func fakeRing(t *testing.T, dataPages int) *ring {
	t.Helper()
	page := os.Getpagesize()
	mem := make([]uint64, (1+dataPages)*page/8) // 8-byte aligned, as the kernel's page
	b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(mem)*8)
	return &ring{mem: b, meta: (*unix.PerfEventMmapPage)(unsafe.Pointer(&b[0])), data: b[page:], shadow: make([]byte, dataPages*page)}
}

// put writes a READ record of tid with count and time at absolute offset
// off (wrapping as the kernel does) and returns the offset after it.
func (r *ring) put(off uint64, tid uint32, count, at uint64) uint64 {
	rec := record(recordRead, 10, tid, uint32(count), uint32(count>>32), 10, tid, uint32(at), uint32(at>>32))
	for i, c := range rec {
		r.data[(off+uint64(i))%uint64(len(r.data))] = c
	}
	return off + uint64(len(rec))
}

func (r *ring) takeAll(final bool, since uint64) (tids []uint32) {
	r.drain(final, since, func(rec []byte) { tids = append(tids, binary.NativeEndian.Uint32(rec[12:])) })
	return tids
}

// The kernel can stop publishing a buffer's data_head while it goes on
// writing records after it (two CPUs writing one buffer: see drain). Those
// records are taken once data_head has stayed put for a whole drain since
// they were seen, and at the end; a record not yet written whole (its time
// still what the buffer held there) is not, nor is the last lap's data.
func TestDrainStuckHead(t *testing.T) {
	r := fakeRing(t, 1)
	since := bootNow() - 1e9
	now := bootNow()
	off := r.put(0, 1, 100, now)
	off = r.put(off, 2, 200, now)
	r.meta.Data_head = off
	if got := r.takeAll(false, since); len(got) != 2 || r.unpublished != 0 {
		t.Fatalf("published records: took %v, %d unpublished", got, r.unpublished)
	}
	// data_head stuck at off from now on.
	stuck := off
	off = r.put(off, 3, 300, now)
	off = r.put(off, 4, 400, now)
	if got := r.takeAll(false, since); len(got) != 0 {
		t.Fatalf("took %v past data_head at first sight", got)
	}
	if got := r.takeAll(false, since); len(got) != 2 || got[0] != 3 || got[1] != 4 || r.unpublished != 2 {
		t.Fatalf("stuck data_head: took %v, %d unpublished; want [3 4], 2", got, r.unpublished)
	}
	// A record whose header is written and its time not yet.
	half := off
	r.data[half], r.data[half+6] = recordRead, 40
	if got := r.takeAll(true, since); len(got) != 0 {
		t.Fatalf("took %v, a record not written whole", got)
	}
	off = r.put(half, 5, 500, now)
	// One stamped before the recording: not this recording's, nor what
	// follows it.
	r.put(off, 6, 600, since-1)
	if got := r.takeAll(true, since); len(got) != 1 || got[0] != 5 || r.meta.Data_tail != off {
		t.Fatalf("at the end: took %v, tail %d; want [5], %d", got, r.meta.Data_tail, off)
	}
	if r.meta.Data_head != stuck {
		t.Fatal("the reader moved data_head")
	}

	// Two writers reserved the same space: a 48-byte EXIT, over which a
	// 40-byte READ was written from the other CPU, and the next record
	// starts 40 bytes in. The reader skips to it and counts the stretch.
	r = fakeRing(t, 1)
	off = r.put(0, 1, 100, now)
	exit := record(recordExit, 10, 1, 11, 1, uint32(now), uint32(now>>32), 10, 11, uint32(now), uint32(now>>32))
	copy(r.data[off:], exit)
	over := r.put(off, 12, 1200, now)
	copy(r.data[off:], exit[:8]) // the EXIT's header survived
	off = r.put(over, 13, 1300, now)
	r.meta.Data_head = off
	if got := r.takeAll(false, since); len(got) != 2 || got[0] != 1 || got[1] != 13 || r.corrupt != 1 || r.meta.Data_tail != off {
		t.Fatalf("written over: took %v, %d stretches skipped, tail %d; want [1 13], 1, %d", got, r.corrupt, r.meta.Data_tail, off)
	}

	// Around the buffer, and past data_head: the last lap's records are
	// left, the new ones (wrapping around the end) taken.
	r = fakeRing(t, 1)
	size := uint64(len(r.data))
	off = 0
	var want int
	for i := uint32(0); off < size-20; i++ {
		off = r.put(off, 100+i, 1, now)
		want++
	}
	r.meta.Data_head = off
	if got := r.takeAll(false, since); len(got) != want {
		t.Fatalf("first lap: took %d, want %d", len(got), want)
	}
	stuck = off
	off = r.put(off, 7, 700, now+1) // wraps around the end
	off = r.put(off, 8, 800, now+1)
	if got := r.takeAll(true, since); len(got) != 2 || got[0] != 7 || got[1] != 8 || r.meta.Data_tail != off {
		t.Fatalf("second lap, stuck data_head %d: took %v, tail %d; want [7 8], %d", stuck, got, r.meta.Data_tail, off)
	}
	if got := r.takeAll(true, since); len(got) != 0 {
		t.Fatalf("the last lap's records again: %v", got)
	}
}

// Whatever the buffer holds and wherever the kernel's head and the
// reader's tail stand, the reader neither panics nor passes a record it
// did not find whole inside the buffer, and its tail never passes a lap
// beyond where it started.
func FuzzDrain(f *testing.F) {
	now := bootNow()
	ok := record(recordRead, 10, 11, 5, 0, 10, 11, uint32(now), uint32(now>>32))
	f.Add(ok, uint16(40), uint16(0), false)
	f.Add(append(ok, ok[:12]...), uint16(48), uint16(0), true)
	f.Add([]byte{7, 0, 0, 0, 0, 0, 48, 0}, uint16(8), uint16(4088), true)
	f.Fuzz(func(t *testing.T, data []byte, head, tail uint16, final bool) {
		r := fakeRing(t, 1)
		size := uint64(len(r.data))
		copy(r.data, data)
		start := uint64(tail) &^ 7
		r.meta.Data_tail = start
		r.meta.Data_head = start + uint64(head)&^7%size
		r.drain(final, now-1e9, func(rec []byte) {
			if len(rec) < 16 || uint64(len(rec)) > size {
				t.Fatalf("record of %d bytes", len(rec))
			}
		})
		if r.meta.Data_tail < start || r.meta.Data_tail > start+size {
			t.Fatalf("tail %d from %d (head %d)", r.meta.Data_tail, start, r.meta.Data_head)
		}
	})
}
