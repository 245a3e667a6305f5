package goroutines

import (
	"bytes"
	"io"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

func FuzzParseStacks(f *testing.F) {
	f.Add("goroutine 1 [running]:\nmain.main()\n\t/x.go:1 +0x1\n")
	f.Add("goroutine 7 [chan receive]:\nmain.f(...)\n\t/x.go:1\ncreated by main.g in goroutine 1\n\t/x.go:2 +0x2\n\ngoroutine x [y]:\n(\n")
	f.Add("goroutine 18446744073709551615 [select]:\n...additional frames elided...\n")
	f.Fuzz(func(t *testing.T, s string) {
		for id, fn := range parseStacks(s) {
			if fn == "" || strings.Contains(fn, "\n") {
				t.Errorf("goroutine %d named %q", id, fn)
			}
		}
	})
}

// A trace cut short (the runtime's writer gone mid-way) ends the reading
// with an error, which Stop turns into a problem: no panic, no hang.
func TestTruncatedTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skip(err)
	}
	runWorkload(5*time.Millisecond, time.Millisecond, false)
	trace.Stop()
	whole := buf.Bytes()
	for _, n := range []int{0, 10, len(whole) / 3, len(whole) - 7} {
		e := newEngine()
		err := e.readTrace(bytes.NewReader(whole[:n]))
		if err == nil {
			t.Errorf("%d of %d bytes: no error", n, len(whole))
			continue
		}
		p := e.finish(monoNow(), err)
		if len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "could not be read to its end") {
			t.Errorf("%d bytes: problems %q", n, p.Problems)
		}
	}
	if err := newEngine().readTrace(io.MultiReader(bytes.NewReader(whole))); err != nil {
		t.Errorf("the whole trace: %v", err)
	}
}
