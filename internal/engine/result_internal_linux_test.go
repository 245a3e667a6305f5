package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/account"
)

// A handle's reads skip the clock readings for a run time the last
// reading allowed, and read them again, and refuse, for one beyond: a
// thread that started a second ago cannot have run for an hour, however
// many reads came before.
func TestResultRuntimeLimit(t *testing.T) {
	t.Parallel()
	c := account.System.Now()
	// Started one second ago, in USER_HZ ticks since boot.
	startNs := c.Wall - c.Offset - int64(time.Second)
	tk := &task{start: uint64(startNs) / uint64(time.Second/time.Duration(userHZ())), split: new(split), clocks: account.System}
	tk.fixCreation()
	if _, err := tk.result(cpuSample{UTime: 1, RTime: uint64(100 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	limit := tk.limit.Load()
	if limit < uint64(time.Second) || limit > uint64(2*time.Second) {
		t.Fatalf("limit %v after a read one second into the thread's life", time.Duration(limit))
	}
	// Within the limit: answered without a new reading (the limit stays).
	if _, err := tk.result(cpuSample{UTime: 2, RTime: limit - 1}); err != nil {
		t.Fatal(err)
	}
	if tk.limit.Load() != limit {
		t.Error("a run time within the limit read the clocks again")
	}
	// Beyond it: checked against a new reading, and refused.
	_, err := tk.result(cpuSample{UTime: 3, RTime: uint64(time.Hour)})
	if !errors.Is(err, ErrInvalidData) {
		t.Errorf("an hour of CPU for a thread a second old: %v, want ErrInvalidData", err)
	}
	// A refused value never reaches the split's memory.
	if total := tk.split.Total(); total != limit-1 {
		t.Errorf("split total %v after the refusal, want %v", time.Duration(total), time.Duration(limit-1))
	}
}

// The one-shots' memory of identities stays bounded, drops half when full
// rather than all of it, and always keeps what was just stored.
func TestIdentitiesBounded(t *testing.T) {
	t.Parallel()
	var identities identityCache
	for i := range maxIdentities + 10 {
		k := identityKey{ino: uint64(i + 1)}
		identities.store(k, identity{start: uint64(i)})
		if id, ok := identities.lookup(k); !ok || id.start != uint64(i) {
			t.Fatalf("entry %d not kept right after it was stored", i)
		}
	}
	n := len(identities.m)
	if n > maxIdentities || n < maxIdentities/2 {
		t.Errorf("%d identities after %d stores, want between %d and %d", n, maxIdentities+10, maxIdentities/2, maxIdentities)
	}
}
