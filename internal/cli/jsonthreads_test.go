package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/timeline"
)

// The hand-written thread lists are the text encoding/json and
// escapeUnprintable give, byte for byte, names of every kind included.
func TestJSONThreadsAsEncodingJSON(t *testing.T) {
	names := []string{"short", "", `quo"te`, `back\slash`, "<html>&", "tab\there", "nl\n", "del\x7f",
		"c1\u009b", "bidi\u202e", "ls\u2028", "bad\xff\xfeutf8", "é日本", "emoji😀", "nul\x00"}
	cyc := uint64(123456789)
	exit := time.Date(2026, 11, 26, 16, 8, 40, 290086746, time.UTC)
	var ts jsonThreads
	for i := range 3 * spliceFrom {
		th := jsonThread{TID: 1000 + i, Name: names[i%len(names)], CreationTime: jsonInstant(time.Unix(1_790_000_000+int64(i/50), int64(i)*7919)),
			UserNs: int64(i) * 1_000_003, KernelNs: int64(i % 7), Incomplete: i%3 == 0, SplitShared: i%5 == 0, EstimatedNs: int64(i % 11)}
		if i%2 == 0 {
			th.ExitTime = jsonOptInstant(exit)
		}
		if i%4 != 0 {
			th.Cycles = &cyc
		}
		ts = append(ts, th)
	}
	want, err := json.Marshal([]jsonThread(ts))
	if err != nil {
		t.Fatal(err)
	}
	want = escapeUnprintable(want)
	if got := ts.appendJSON(nil); !bytes.Equal(got, want) {
		t.Errorf("hand-written:\n%s\nencoding/json:\n%s", got, want)
	}

	// Through encodeJSON, in a process and in a nested child, beside short
	// lists that take encoding/json's path; and indented when small.
	for _, n := range []int{0, 63, 64, len(ts)} {
		p := jsonProcess{PID: 1, Name: "top", Threads: ts[:n]}
		v := struct {
			jsonProcess
			Children []jsonChild `json:"children"`
		}{p, []jsonChild{{jsonProcess: jsonProcess{PID: 2, Threads: ts}}, {jsonProcess: jsonProcess{PID: 3}}}}
		var got bytes.Buffer
		if err := encodeJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		spliceFrom = math.MaxInt // encoding/json's own
		want, _ := json.Marshal(v)
		spliceFrom = 64
		var a, b any
		if err := json.Unmarshal(got.Bytes(), &a); err != nil {
			t.Fatalf("%d threads: encodeJSON wrote invalid JSON: %v", n, err)
		}
		json.Unmarshal(want, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%d threads: encodeJSON decodes to\n%v\nencoding/json to\n%v", n, a, b)
		}
		if strings.Contains(got.String(), placeholderExp) {
			t.Errorf("%d threads: a placeholder was left in the output", n)
		}
	}
	pendingMu.Lock()
	left := len(pending)
	pendingMu.Unlock()
	if left != 0 {
		t.Errorf("%d thread lists left registered after encoding", left)
	}
}

// The hand-written lists of children are the text encoding/json and
// escapeUnprintable give, byte for byte, at any depth, with thread lists
// long and short, null and empty.
func TestJSONChildrenAsEncodingJSON(t *testing.T) {
	names := []string{"sh", "", `quo"te`, "<b>&", "nl\n", "c1\u009b", "bidi\u202e", "bad\xff", "日本"}
	cyc := uint64(42)
	when := jsonTime(time.Date(2026, 11, 26, 16, 8, 40, 290086746, time.UTC))
	th := func(n int) jsonThreads {
		ts := make(jsonThreads, n)
		for i := range ts {
			ts[i] = jsonThread{TID: 7 + i, Name: names[i%len(names)], CreationTime: jsonInstant(time.Unix(1_790_000_000, int64(i)))}
		}
		return ts
	}
	var mk func(depth, width int) jsonChildren
	mk = func(depth, width int) jsonChildren {
		if depth == 0 {
			return jsonChildren{}
		}
		out := jsonChildren{}
		for i := range width {
			c := jsonChild{jsonProcess: jsonProcess{PID: 100*depth + i, Name: names[(depth+i)%len(names)], UserNs: int64(i) * 1001, KernelNs: -int64(i),
				ThreadCount: i, Threads: th(i * 40), AccessDenied: i%2 == 1}, PPID: depth, Children: mk(depth-1, width)}
			if i%2 == 0 {
				c.CreationTime, c.ExitTime, c.Cycles = &when, &when, &cyc
			}
			if i == 2 {
				c.Threads, c.Children = nil, nil
			}
			out = append(out, c)
		}
		return out
	}
	cs := mk(3, 3)
	var o jsonOut
	cs.write(&o)
	spliceFrom = math.MaxInt // encoding/json's own
	want, err := json.Marshal(cs)
	spliceFrom = 64
	if err != nil {
		t.Fatal(err)
	}
	if want = escapeUnprintable(want); !bytes.Equal(o.b, want) {
		t.Errorf("hand-written:\n%s\nencoding/json:\n%s", o.b, want)
	}
	// Through encodeJSON, in a run record.
	var got bytes.Buffer
	if err := encodeJSON(&got, jsonRun{jsonProcess: jsonProcess{PID: 1, Threads: th(70)}, Children: cs}); err != nil {
		t.Fatal(err)
	}
	var x, y any
	if err := json.Unmarshal(got.Bytes(), &x); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	spliceFrom = math.MaxInt
	want, _ = json.Marshal(jsonRun{jsonProcess: jsonProcess{PID: 1, Threads: th(70)}, Children: cs})
	spliceFrom = 64
	json.Unmarshal(want, &y)
	if fmt.Sprint(x) != fmt.Sprint(y) {
		t.Errorf("encodeJSON decodes to\n%v\nencoding/json to\n%v", x, y)
	}
}

// A record too long to indent is written as it is made, and that text is
// the one the whole record in memory has: encoding/json's, decoded.
func TestJSONThreadsStreamed(t *testing.T) {
	exit := time.Date(2026, 11, 26, 16, 8, 40, 290086746, time.UTC)
	ts := make(jsonThreads, 3000)
	for i := range ts {
		ts[i] = jsonThread{TID: i + 1, Name: []string{"short", "nl\n", "é"}[i%3], CreationTime: jsonInstant(exit.Add(-time.Duration(i) * time.Millisecond)),
			ExitTime: jsonOptInstant(exit), UserNs: int64(i), EstimatedNs: int64(i % 3)}
	}
	v := struct {
		jsonProcess
		Children []jsonChild `json:"children"`
	}{jsonProcess{PID: 1, Name: "top", Threads: ts}, []jsonChild{{jsonProcess: jsonProcess{PID: 2, Threads: ts[:100]}}}}
	var got bytes.Buffer
	if err := encodeJSON(&got, v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	b = escapeUnprintable(b)
	whole := append(joinSplices(b, findSplices(b)), '\n')
	if !bytes.Equal(got.Bytes(), whole) {
		t.Errorf("streamed record (%d bytes) differs from the whole one (%d bytes)", got.Len(), len(whole))
	}
	spliceFrom = math.MaxInt // encoding/json's own
	want, _ := json.Marshal(v)
	spliceFrom = 64
	var x, y any
	if err := json.Unmarshal(got.Bytes(), &x); err != nil {
		t.Fatalf("streamed record is not JSON: %v", err)
	}
	json.Unmarshal(want, &y)
	if fmt.Sprint(x) != fmt.Sprint(y) {
		t.Error("streamed record decodes to another value than encoding/json's")
	}
}

// minThreadJSON is no more than the shortest thread's JSON: a record
// judged too long to indent by it is.
func TestMinThreadJSON(t *testing.T) {
	zero := uint64(0)
	for _, th := range []jsonThread{{}, {Cycles: &zero}} {
		if n := len(jsonThreads{th}.appendJSON(nil)) - 2; n < minThreadJSON {
			t.Errorf("%+v: %d bytes of JSON, fewer than minThreadJSON (%d)", th, n, minThreadJSON)
		}
	}
}

// A name holding the placeholder's text is a name, not a placeholder.
func TestJSONThreadsPlaceholderInName(t *testing.T) {
	ts := make(jsonThreads, spliceFrom)
	for i := range ts {
		ts[i] = jsonThread{TID: i, Name: `"threads":1` + placeholderExp}
	}
	var got bytes.Buffer
	if err := encodeJSON(&got, jsonProcess{Name: `"threads":1` + placeholderExp, Threads: ts}); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Name    string
		Threads []jsonThread
	}
	if err := json.Unmarshal(got.Bytes(), &p); err != nil || len(p.Threads) != len(ts) || p.Threads[5].Name != ts[5].Name || p.Name != ts[0].Name {
		t.Errorf("decoded %+v, %v from\n%.300s", p, err, got.String())
	}
}

// appendRFC3339 formats as time.Format with rfc3339 does, in and out of
// the years it writes itself.
func TestAppendRFC3339(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	times := []time.Time{{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 3, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 5, time.FixedZone("x", 5*3600+1800))}
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(400*365*86400)-200*365*86400, r.Int64N(1e9)))
	}
	// Instants within one second, then across seconds, days, years.
	base := time.Date(2026, 12, 31, 23, 59, 58, 0, time.UTC)
	for i := range 3000 {
		times = append(times, base.Add(time.Duration(i)*time.Millisecond+time.Duration(i)))
	}
	var c rfc3339Cache // one cache for all, as a record's thread list has
	for _, tm := range times {
		want := tm.UTC().Format(rfc3339)
		if got := string(appendRFC3339(nil, tm)); got != want {
			t.Errorf("%v: %s, want %s", tm, got, want)
		}
		if got := string(c.append(nil, tm)); got != want {
			t.Errorf("%v through the cache: %s, want %s", tm, got, want)
		}
	}
}

func BenchmarkJSONThreads(b *testing.B) {
	now := time.Now()
	ts := make(jsonThreads, 5000)
	for i := range ts {
		ts[i] = jsonThread{TID: 100000 + i, Name: "short", CreationTime: jsonInstant(now), ExitTime: jsonOptInstant(now), UserNs: 123456, KernelNs: 654321}
	}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			encodeJSON(&bytes.Buffer{}, jsonProcess{Threads: ts})
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			x, _ := json.Marshal([]jsonThread(ts))
			escapeUnprintable(x)
		}
	})
}

// BenchmarkRunRecord writes run --tree --json's record of one process of
// 5,000 threads: what cputime does between CMD's exit and its own.
func BenchmarkRunRecord(b *testing.B) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	p := timeline.Process{ID: 100, Name: "top", Creation: t0, Exit: t0.Add(2 * time.Second)}
	for i := range 5000 {
		p.Threads = append(p.Threads, timeline.Thread{ID: 100 + i, Name: "short", Creation: t0.Add(time.Duration(i) * 97 * time.Microsecond),
			Exit: t0.Add(time.Duration(i)*97*time.Microsecond + 300*time.Microsecond), User: 123456 * time.Nanosecond, Kernel: 54321, Estimated: 2000})
	}
	r := runRecord{
		record:    record{ProcessInfo: cputime.ProcessInfo{ID: 100, Name: "top", Times: cputime.Times{Creation: t0, Exit: t0.Add(2 * time.Second)}}},
		recording: &timeline.Recording{Start: t0, End: t0.Add(2 * time.Second), Processes: []timeline.Process{p}},
		detail:    true, run: true,
	}
	cyc := cycler{&lazyFrequency{asked: true}}
	for b.Loop() {
		if err := writeRunRecord(io.Discard, r, true, time.UTC, cyc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunRecordProcesses writes run --tree --json's record of a shell
// loop that ran 2,000 short processes of one thread each.
func BenchmarkRunRecordProcesses(b *testing.B) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	top := timeline.Process{ID: 100, Name: "sh", Creation: t0, Exit: t0.Add(2 * time.Second),
		Threads: []timeline.Thread{{ID: 100, Name: "sh", Creation: t0, Exit: t0.Add(2 * time.Second), User: time.Millisecond}}}
	rec := &timeline.Recording{Start: t0, End: t0.Add(2 * time.Second), Processes: []timeline.Process{top}}
	for i := range 2000 {
		c := t0.Add(time.Duration(i) * 900 * time.Microsecond)
		rec.Processes = append(rec.Processes, timeline.Process{ID: 101 + i, Parent: 100, Name: "true", Creation: c, Exit: c.Add(500 * time.Microsecond),
			User: 200 * time.Microsecond, Kernel: 300 * time.Microsecond,
			Threads: []timeline.Thread{{ID: 101 + i, Name: "true", Creation: c, Exit: c.Add(500 * time.Microsecond), User: 200 * time.Microsecond, Kernel: 300 * time.Microsecond}}})
	}
	r := runRecord{
		record:    record{ProcessInfo: cputime.ProcessInfo{ID: 100, Name: "sh", Times: cputime.Times{Creation: t0, Exit: t0.Add(2 * time.Second)}}},
		recording: rec, detail: true, run: true,
	}
	cyc := cycler{&lazyFrequency{asked: true}}
	for b.Loop() {
		if err := writeRunRecord(io.Discard, r, true, time.UTC, cyc); err != nil {
			b.Fatal(err)
		}
	}
}
