package account

import (
	"encoding/binary"
	"testing"
)

func TestAdjust(t *testing.T) {
	t.Parallel()
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
		var s Split
		for i, st := range steps {
			user, kernel := s.Adjust(Evidence{UTime: st.utime, STime: st.stime, RTime: st.rtime})
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
		var s Split
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
				s.Extend(next, false)
				user, kernel = s.Last()
			} else {
				user, kernel = s.Adjust(Evidence{UTime: utime, STime: stime, RTime: next})
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

// TestSplitRule checks the rule every path applies: a pure function of the
// evidence, with the kernel's conventions for tasks without tick samples,
// and none of a kernel thread's time in user mode.
func TestSplitRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		e            Evidence
		user, kernel uint64
	}{
		{"ratio", Evidence{UTime: 3, STime: 1, RTime: 400}, 300, 100},
		{"no ticks yet: all user, as the kernel has it", Evidence{RTime: 9_000_000}, 9_000_000, 0},
		{"user ticks only", Evidence{UTime: 2, RTime: 90}, 90, 0},
		{"kernel ticks only", Evidence{STime: 2, RTime: 90}, 0, 90},
		{"kernel thread without ticks", Evidence{RTime: 5_000_000, KThread: true}, 0, 5_000_000},
		{"kernel thread with (impossible) user ticks", Evidence{UTime: 4, STime: 1, RTime: 50, KThread: true}, 0, 50},
	} {
		user, kernel := Rule(c.e)
		if user != c.user || kernel != c.kernel {
			t.Errorf("%s: Rule(%+v) = %d, %d; want %d, %d", c.name, c.e, user, kernel, c.user, c.kernel)
		}
		// A fresh memory gives the rule's answer: the first read of a
		// handle agrees with a one-shot read of the same state.
		var s Split
		if u, k := s.Adjust(c.e); u != user || k != kernel {
			t.Errorf("%s: a fresh handle's split %d, %d differs from the rule's %d, %d", c.name, u, k, user, kernel)
		}
	}
}

// Covers answers only for a total the split has already accounted for, with
// exactly what Adjust last returned.
func TestCovers(t *testing.T) {
	t.Parallel()
	var s Split
	if _, _, ok := s.Covers(0); ok {
		t.Error("a fresh split covers a zero total: nothing has been reported yet")
	}
	user, kernel := s.Adjust(Evidence{UTime: 3, STime: 1, RTime: 400})
	for _, rtime := range []uint64{1, 399, 400} {
		u, k, ok := s.Covers(rtime)
		if !ok || u != user || k != kernel {
			t.Errorf("Covers(%d) = %d, %d, %v; want %d, %d, true", rtime, u, k, ok, user, kernel)
		}
	}
	if _, _, ok := s.Covers(401); ok {
		t.Error("Covers(401) after a split of 400: a grown total needs Adjust")
	}
}
