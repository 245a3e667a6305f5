package cputime

import (
	"encoding/binary"
	"testing"
)

func TestAdjust(t *testing.T) {
	type step struct{ utime, stime, rtime, user, kernel uint64 }
	for name, steps := range map[string][]step{
		"ratio": {
			{utime: 3, stime: 1, rtime: 400, user: 300, kernel: 100},
			{utime: 3, stime: 1, rtime: 800, user: 600, kernel: 200},
		},
		"no kernel ticks yet: all user": {
			{utime: 0, stime: 0, rtime: 50, user: 50, kernel: 0},
			{utime: 5, stime: 0, rtime: 70, user: 70, kernel: 0},
		},
		"only kernel ticks": {
			{utime: 0, stime: 7, rtime: 90, user: 0, kernel: 90},
		},
		// The ratio swings to kernel: user may not go backwards, so the
		// new time goes to kernel only as far as user stays put.
		"kernel catches up without user going back": {
			{utime: 1, stime: 0, rtime: 100, user: 100, kernel: 0},
			{utime: 1, stime: 1, rtime: 120, user: 100, kernel: 20},
			{utime: 1, stime: 3, rtime: 400, user: 100, kernel: 300},
		},
		"kernel may not go back either": {
			{utime: 1, stime: 1, rtime: 100, user: 50, kernel: 50},
			{utime: 9, stime: 1, rtime: 110, user: 60, kernel: 50},
		},
		"stale total keeps the last split": {
			{utime: 1, stime: 1, rtime: 100, user: 50, kernel: 50},
			{utime: 1, stime: 1, rtime: 90, user: 50, kernel: 50},
			{utime: 1, stime: 1, rtime: 100, user: 50, kernel: 50},
		},
		"no overflow near 2^64": {
			{utime: 1 << 62, stime: 1 << 62, rtime: 1<<63 + 2, user: 1<<62 + 1, kernel: 1<<62 + 1},
		},
	} {
		var s split
		for i, st := range steps {
			user, kernel := s.adjust(st.utime, st.stime, st.rtime)
			if user != st.user || kernel != st.kernel {
				t.Errorf("%s: step %d: adjust(%d, %d, %d) = %d, %d; want %d, %d",
					name, i, st.utime, st.stime, st.rtime, user, kernel, st.user, st.kernel)
			}
		}
	}
}

// FuzzAdjust feeds a series of readings whose counters never decrease, as
// the kernel's do, and checks the contract: user + kernel is the exact total
// whenever the total advanced, and neither part ever decreases.
func FuzzAdjust(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 5, 0, 0, 0, 10, 0, 0, 0, 2, 3, 0, 0, 9, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s split
		var utime, stime, rtime, lastUser, lastKernel uint64
		for len(data) >= 12 {
			utime += uint64(binary.LittleEndian.Uint32(data[0:]))
			stime += uint64(binary.LittleEndian.Uint32(data[4:]))
			next := rtime + uint64(binary.LittleEndian.Uint32(data[8:]))
			if len(data) >= 13 && data[12]&1 == 1 && next > 0 {
				next-- // now and then a reading that lags the last one
			}
			totalOnly := len(data) >= 13 && data[12]&2 == 2 // a cycle-time reader
			data = data[min(13, len(data)):]
			var user, kernel uint64
			if totalOnly {
				s.extend(next)
				user, kernel = s.last()
			} else {
				user, kernel = s.adjust(utime, stime, next)
			}
			if user < lastUser || kernel < lastKernel {
				t.Fatalf("went backwards: %d,%d after %d,%d", user, kernel, lastUser, lastKernel)
			}
			if next > lastUser+lastKernel && user+kernel != next {
				t.Fatalf("parts %d+%d != total %d", user, kernel, next)
			}
			if next > rtime {
				rtime = next
			}
			lastUser, lastKernel = user, kernel
		}
	})
}

func TestSplitForGenerations(t *testing.T) {
	// Start from an empty table: the counts below assume it. Handles keep
	// their own pointers, so other tests' state is not disturbed.
	splits.Lock()
	splits.cur, splits.old = make(map[taskKey]*split), nil
	splits.Unlock()
	k := taskKey{id: 1, start: 1}
	s := splitFor(k)
	if splitFor(k) != s {
		t.Fatal("same key, different state")
	}
	for i := range 2*splitGeneration - 1 { // pushes k into the old generation
		splitFor(taskKey{id: int32(i + 2), start: 2})
	}
	if splitFor(k) != s {
		t.Error("a key read within two generations lost its state")
	}
	for i := range 3 * splitGeneration {
		splitFor(taskKey{id: int32(i + 2), start: 3})
	}
	if splitFor(k) == s {
		t.Error("a key unread for two generations kept its state: the table is unbounded")
	}
}
