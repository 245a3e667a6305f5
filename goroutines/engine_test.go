package goroutines

import (
	"testing"
	"time"
)

// The engine alone, on hand-made streams: what it credits is arithmetic
// that can be checked by hand.

func newTestEngine() *engine {
	e := newEngine()
	e.winStart = 1000
	return e
}

func TestEngineExactIntersection(t *testing.T) {
	e := newTestEngine()
	g := e.gor(7)
	g.fn, g.named = "main.worker", true
	// thread 100 on the CPU 1000-1500 and 2000-3000; goroutine 7 holds it
	// 1200-2500: 300 + 500 ns.
	e.addPiece(100, 1000, 1500, 500)
	e.addPiece(100, 2000, 3000, 1000)
	e.hold(g, 100, 1200)
	e.release(g, 2500)
	p := e.finish(3000, nil)
	if len(p.Goroutines) != 1 || p.Goroutines[0].CPU != 800 {
		t.Fatalf("goroutines %+v, want 7 with 800 ns", p.Goroutines)
	}
	if p.Runtime != 700 || len(p.Threads) != 1 || p.Threads[0].CPU != 1500 {
		t.Errorf("runtime %v, threads %+v; want 700 ns, thread 100 with 1500 ns", p.Runtime, p.Threads)
	}
}

// A piece from the fallback (400 ns of CPU over 1000 ns of wall) is shared
// by running time.
func TestEngineRateSharing(t *testing.T) {
	e := newTestEngine()
	a, b := e.gor(1), e.gor(2)
	e.addPiece(5, 1000, 2000, 400)
	e.hold(a, 5, 1000)
	e.release(a, 1250)
	e.hold(b, 5, 1250)
	e.release(b, 2000)
	p := e.finish(2000, nil)
	got := map[uint64]time.Duration{}
	for _, g := range p.Goroutines {
		got[g.ID] = g.CPU
	}
	if got[1] != 100 || got[2] != 300 {
		t.Errorf("shares %v, want 1:100 2:300", got)
	}
}

// The watermark: a segment is credited in parts as CPU data arrives, and
// pieces nothing can reach are dropped.
func TestEngineWatermark(t *testing.T) {
	e := newTestEngine()
	g := e.gor(3)
	e.hold(g, 9, 1000)
	e.release(g, 5000)
	e.traceNow = 5000
	e.addPiece(9, 1000, 2000, 1000)
	e.known = 2000
	e.advance()
	if g.cpu != 1000 || len(e.threads[9].segs) != 1 || e.threads[9].segs[0].start != 2000 {
		t.Fatalf("after the first watermark: cpu %d, segs %+v", g.cpu, e.threads[9].segs)
	}
	if len(e.threads[9].pieces) != 0 {
		t.Errorf("pieces kept after use: %+v", e.threads[9].pieces)
	}
	e.addPiece(9, 3000, 4000, 1000)
	e.known = 6000
	e.advance()
	if g.cpu != 2000 || len(e.threads[9].segs) != 0 {
		t.Errorf("after the second: cpu %d, segs %+v", g.cpu, e.threads[9].segs)
	}
	if p := e.finish(6000, nil); p.Threads[0].CPU != 2000 || p.Runtime != 0 {
		t.Errorf("threads %+v runtime %v", p.Threads, p.Runtime)
	}
}

// Tasks: a segment cut at the task's begin and end; the parent counts its
// child's CPU; a goroutine that ran before Start is named from the stacks
// read at Start, else stably unknown.
func TestEngineTasks(t *testing.T) {
	e := newTestEngine()
	e.names = map[uint64]string{1: "main.main"}
	e.tasks[50] = &taskInfo{id: 50, typ: "request"}
	e.tasks[51] = &taskInfo{id: 51, parent: 50, typ: "step"}
	g := e.gor(1)
	e.addPiece(1, 1000, 9000, 8000)
	e.hold(g, 1, 1000)
	g.stack = append(g.stack, taskFrame{id: 50})
	e.cut(g, 2000)
	g.stack = append(g.stack, taskFrame{id: 51})
	e.cut(g, 3000)
	g.stack = g.stack[:1]
	e.cut(g, 3500)
	g.stack = nil
	e.cut(g, 4000)
	h := e.gor(2)
	e.hold(h, 2, 1000) // thread 2 has no CPU source: its time is a problem, not CPU
	e.release(h, 2000)
	p := e.finish(4000, nil)
	want := map[uint64]time.Duration{50: 2500, 51: 1000}
	for _, k := range p.Tasks {
		if k.CPU != want[k.ID] {
			t.Errorf("task %d (%s): %v, want %v", k.ID, k.Type, k.CPU, want[k.ID])
		}
	}
	if g0, _ := byIDPlain(p, 1); g0.CPU != 3000 || g0.Function != "main.main" {
		t.Errorf("goroutine 1: %+v", g0)
	}
	if g2, _ := byIDPlain(p, 2); g2.Function != unknownFunction || g2.CPU != 0 {
		t.Errorf("goroutine 2: %+v", g2)
	}
	if len(p.Problems) != 1 {
		t.Errorf("problems %q, want one on the uncovered thread", p.Problems)
	}
}

func byIDPlain(p *Profile, id uint64) (Goroutine, bool) {
	for _, g := range p.Goroutines {
		if g.ID == id {
			return g, true
		}
	}
	return Goroutine{}, false
}

func TestParseStacks(t *testing.T) {
	dump := `goroutine 1 [running]:
main.main()
	/src/main.go:12 +0x1d

goroutine 7 [chan receive]:
main.(*server).loop(0xc000010000, {0x1, 0x2})
	/src/server.go:40 +0x55
main.(*server).run(...)
	/src/server.go:30
created by main.start in goroutine 1
	/src/server.go:20 +0x66

goroutine 11 [sleep]:
time.Sleep(0x34630b8a000)
	/usr/lib/go/src/runtime/time.go:363 +0x165
...203 frames elided...
main.starter()
	/src/deep.go:15 +0x17
created by main.main in goroutine 1
	/src/deep.go:19 +0x1a

goroutine 9 [select, 2 minutes]:
net/http.(*persistConn).writeLoop(0xc0001)
	/usr/lib/go/src/net/http/transport.go:2444 +0xf5
created by net/http.(*Transport).dialConn in goroutine 8
	/usr/lib/go/src/net/http/transport.go:1777 +0x16f1

garbage
`
	got := parseStacks(dump)
	want := map[uint64]string{1: "main.main", 7: "main.(*server).run", 9: "net/http.(*persistConn).writeLoop", 11: "main.starter"}
	if len(got) != len(want) {
		t.Errorf("got %v", got)
	}
	for id, fn := range want {
		if got[id] != fn {
			t.Errorf("goroutine %d: %q, want %q", id, got[id], fn)
		}
	}
}

func TestPprofEncoding(t *testing.T) {
	var b pbuf
	b.varint(300)
	if string(b) != "\xac\x02" {
		t.Errorf("varint(300) = %x", []byte(b))
	}
	var m pbuf
	m.uint(1, 0) // zero is the default: not written
	if len(m) != 0 {
		t.Errorf("zero field written: %x", []byte(m))
	}
	m.bytes(tagProfile_StringTable, []byte("cpu"))
	if string(m) != "\x32\x03cpu" {
		t.Errorf("string field = %x", []byte(m))
	}
}

// The fallback shares a sample's growth among the goroutines that held the
// thread within it by running time, at most their running time each: a
// thread idle for most of a long sample does not dilute its goroutines.
func TestEngineShareByRunning(t *testing.T) {
	for _, tc := range []struct {
		cpu    int64
		wa, wb time.Duration
	}{
		{cpu: 200, wa: 50, wb: 150},  // 200 ns over 400 ns held: half each ns
		{cpu: 900, wa: 100, wb: 300}, // more than held: each its running time, the rest is the runtime's
	} {
		e := newTestEngine()
		e.shareByRunning = true
		a, b := e.gor(1), e.gor(2)
		e.hold(a, 5, 1000)
		e.release(a, 1100)
		e.hold(b, 5, 1500)
		e.release(b, 1800)
		e.traceNow = 1800
		e.addPiece(5, 1000, 2000, tc.cpu)
		e.known = 2000
		e.advance() // the trace has not passed the piece's end: nothing credited yet
		if a.cpu != 0 {
			t.Errorf("credited before the trace passed the sample: %d", a.cpu)
		}
		e.traceNow = 2100
		e.advance()
		if time.Duration(a.cpu) != tc.wa || time.Duration(b.cpu) != tc.wb {
			t.Errorf("cpu %d: shares %d, %d; want %v, %v", tc.cpu, a.cpu, b.cpu, tc.wa, tc.wb)
		}
		p := e.finish(2000, nil)
		if p.Threads[0].CPU != time.Duration(tc.cpu) || p.Runtime != time.Duration(tc.cpu)-tc.wa-tc.wb {
			t.Errorf("threads %+v runtime %v", p.Threads, p.Runtime)
		}
	}
}

// A goroutine preempted and resumed on the same thread with nothing in
// between is charged the thread's CPU in the gap (a locked goroutine's
// hand-off); one that another goroutine displaced is not.
func TestEnginePreemptionGap(t *testing.T) {
	e := newTestEngine()
	a, b := e.gor(1), e.gor(2)
	e.addPiece(3, 1000, 5000, 4000)
	e.hold(a, 3, 1000)
	e.release(a, 2000)
	e.preempted(a, e.threads[3], 2000)
	e.hold(a, 3, 2100) // back after 100 ns of scheduler work: a's
	e.release(a, 3000)
	e.preempted(a, e.threads[3], 3000)
	e.hold(b, 3, 3200) // b in between: the gap is the runtime's
	e.release(b, 3500)
	e.hold(a, 3, 3600)
	e.release(a, 4000)
	p := e.finish(5000, nil)
	got := map[uint64]time.Duration{}
	for _, g := range p.Goroutines {
		got[g.ID] = g.CPU
	}
	if got[1] != 2400 || got[2] != 300 || p.Runtime != 1300 {
		t.Errorf("a %v b %v runtime %v; want 2400, 300, 1300", got[1], got[2], p.Runtime)
	}
}

// In the fallback, a sample is not shared out while a preemption gap in it
// is unresolved: the goroutine that comes back owns the gap.
func TestEngineShareWaitsForGap(t *testing.T) {
	e := newTestEngine()
	e.shareByRunning = true
	a := e.gor(1)
	e.hold(a, 5, 1000)
	e.release(a, 1400)
	e.preempted(a, e.threads[5], 1400)
	e.addPiece(5, 1000, 2000, 800)
	e.known, e.traceNow = 2000, 2100
	e.advance()
	e.hold(a, 5, 2100) // back: held 1000-2100, all of the sample
	e.release(a, 2200)
	e.traceNow = 2200
	e.advance()
	p := e.finish(2200, nil)
	if p.Goroutines[0].CPU != 800 || p.Runtime != 0 {
		t.Errorf("goroutine %v runtime %v; want 800 ns and none", p.Goroutines[0].CPU, p.Runtime)
	}
}

// With coarse clocks (Windows' GetThreadTimes, which advance by a clock
// interrupt's quantum), a piece may hold more CPU than the thread was held
// in it, the next one less: the goroutines get the piece whole, so a
// locked goroutine's sum is its thread's clock however the quanta fall.
func TestEngineCoarseKeepsExcess(t *testing.T) {
	for _, coarse := range []bool{false, true} {
		e := newTestEngine()
		e.shareByRunning, e.coarse = true, coarse
		a := e.gor(1)
		e.hold(a, 5, 1000)
		e.addPiece(5, 1000, 2000, 1500) // a quantum landed here
		e.addPiece(5, 2000, 3000, 500)  // and was missing here
		e.release(a, 3000)
		e.known, e.traceNow = 3000, 3100
		e.advance()
		p := e.finish(3000, nil)
		want, runtime := time.Duration(2000), time.Duration(0)
		if !coarse {
			want, runtime = 1500, 500 // capped: the excess is lost to the runtime
		}
		if p.Goroutines[0].CPU != want || p.Runtime != runtime {
			t.Errorf("coarse %v: goroutine %v runtime %v; want %v and %v", coarse, p.Goroutines[0].CPU, p.Runtime, want, runtime)
		}
	}
}
