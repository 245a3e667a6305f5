package goroutines

import (
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var sink atomic.Uint64

func spin(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func goid() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	n, _ := strconv.ParseUint(strings.Fields(string(b))[1], 10, 64)
	return n
}

func byID(p *Profile, id uint64) (Goroutine, bool) {
	for _, g := range p.Goroutines {
		if g.ID == id {
			return g, true
		}
	}
	return Goroutine{}, false
}

// waitThrough polls w until its counters hold the CPU up to at least the
// moment at (within 30 s) and returns that snapshot.
func waitThrough(t *testing.T, w *Watcher, at time.Time) Snapshot {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := w.Snapshot()
		if !s.Through.Before(at) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the counters still hold the CPU only up to %v, 30 s after %v", s.Through.Format(time.StampMicro), at.Format(time.StampMicro))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func typeCPU(s Snapshot, name string) TypeCPU {
	for _, x := range s.Types {
		if x.Type == name {
			return x
		}
	}
	return TypeCPU{}
}
