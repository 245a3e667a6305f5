package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/timeline"
)

// Task names are written as encoding/json writes a string, with every
// rune a terminal could act on escaped as well, as escapeUnprintable does
// to encoding/json's text.
var jsonHostileNames = []string{"short", "", `quo"te`, `back\slash`, "<html>&", "tab\there", "nl\n", "del\x7f",
	"c1\u009b", "bidi\u202e", "ls\u2028", "bad\xff\xfeutf8", "é日本", "emoji😀", "nul\x00"}

func TestJSONNameAsEncodingJSON(t *testing.T) {
	for _, n := range jsonHostileNames {
		want, _ := json.Marshal(n)
		want = escapeUnprintable(want)
		if got := appendJSONString(nil, n); !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", n, got, want)
		}
		if got, _ := json.Marshal(jsonName(n)); !bytes.Equal(got, want) {
			t.Errorf("json.Marshal(jsonName(%q)): %s, want %s", n, got, want)
		}
	}
}

func testThreads(n int) jsonThreads {
	cyc := uint64(123456789)
	exit := time.Date(2026, 11, 26, 16, 8, 40, 290086746, time.UTC)
	var ts jsonThreads
	for i := range n {
		th := jsonThread{TID: 1000 + i, Name: jsonName(jsonHostileNames[i%len(jsonHostileNames)]), CreationTime: jsonInstant(time.Unix(1_790_000_000+int64(i/50), int64(i)*7919)),
			UserNs: int64(i) * 1_000_003, KernelNs: int64(i % 7), Incomplete: i%3 == 0, SplitShared: i%5 == 0, EstimatedNs: int64(i % 11)}
		if i%2 == 0 {
			th.ExitTime = jsonOptInstant(exit)
		}
		if i%4 != 0 {
			th.Cycles = &cyc
		}
		ts = append(ts, th)
	}
	return ts
}

func testChildren(depth, width int) jsonChildren {
	if depth == 0 {
		return jsonChildren{}
	}
	cyc := uint64(42)
	when := jsonTime(time.Date(2026, 11, 26, 16, 8, 40, 290086746, time.UTC))
	out := jsonChildren{}
	for i := range width {
		c := jsonChild{jsonProcess: jsonProcess{PID: 100*depth + i, Name: jsonName(jsonHostileNames[(depth+i)%len(jsonHostileNames)]), UserNs: int64(i) * 1001, KernelNs: -int64(i),
			ThreadCount: i, Threads: testThreads(i * 40), AccessDenied: i%2 == 1}, PPID: depth, Children: testChildren(depth-1, width)}
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

func testRun() jsonRun {
	ui, ki, prec := int64(5_000_001), int64(7), "1us"
	wall, pct, rss, vol, inv := int64(2_000_000_000), 12.5, int64(4096), int64(3), int64(0)
	sub, reaped, running, code, sig, name := true, 2, 1, 0, 9, "SIGKILL"
	missed, job := 1, 4
	return jsonRun{jsonProcess: jsonProcess{PID: 1, Name: "top\u202e", Threads: testThreads(70), ThreadCount: 70},
		FinalExact: true, TotalUserNs: &ui, TotalKernelNs: &ki, TotalPrecision: &prec,
		Children: testChildren(3, 3),
		Recording: &jsonRecording{Complete: false, Problems: []string{"the kernel dropped 3 records", "<b>"}, Source: "perf",
			Events: "inherited", StealNs: 10, ExcessNs: 1, ShortfallNs: 2, LostRecords: 3, IncompleteThreads: 4,
			RunningThreads: 5, CorruptStretches: 6, ContextSwap: true, BufferBytes: 65536, Processes: 13, Threads: 80,
			MissedProcesses: &missed, MissedPIDs: []int{42}, JobProcesses: &job, Note: "n"},
		Exit:   &jsonExitStatus{Code: &code, Signal: &sig, SignalName: &name, CoreDumped: true},
		WallNs: &wall, CPUPercent: &pct, MaxRSSKiB: &rss, VoluntaryContextSwitches: &vol, InvoluntaryContextSwitches: &inv,
		Subreaper: &sub, OrphansReaped: &reaped, OrphansRunning: &running,
		ByCommand:         []jsonCommand{{Name: "cc\x1b", Processes: 3, Threads: 4, UserNs: 5, KernelNs: 6, PeakConcurrent: 2}, {Name: "ld"}},
		TreePeakMemoryKiB: &rss, TreePeakMemorySource: &prec,
		Parallelism: &jsonParallelism{Average: 1.935, Peak: 2, PeakWindowNs: 10_000_000, PeakFromSamples: true, PeakThreadsAlive: 11}}
}

// Each record type is written field by field in the text encoding/json
// gives it by reflection (the types converted to ones without methods),
// at any depth, with lists long and short, null and empty.
func TestJSONAsEncodingJSON(t *testing.T) {
	type plainThreads []jsonThread
	type plainChildren []jsonChild
	type plainProcesses []jsonProcess
	type plainRun jsonRun
	type plainRecording jsonRecording
	ts, cs, r := testThreads(200), testChildren(3, 3), testRun()
	ps := jsonProcesses{r.jsonProcess, cs[0].jsonProcess, {PID: 9, Threads: nil}}
	for _, c := range []struct {
		name  string
		value jsonValue
		plain any
	}{
		{"threads", ts, plainThreads(ts)},
		{"children", cs, plainChildren(cs)},
		{"listing", ps, plainProcesses(ps)},
		{"process", &ps[0], ps[0]},
		{"run", &r, plainRun(r)},
		{"recording", r.Recording, (*plainRecording)(r.Recording)},
		{"empty run", &jsonRun{}, plainRun{}},
	} {
		got, _ := marshal(c.value)
		want, err := json.Marshal(c.plain)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: hand-written:\n%s\nencoding/json:\n%s", c.name, got, want)
		}
		// And json.Marshal of the type itself says the same.
		if m, ok := c.value.(json.Marshaler); ok {
			if b, _ := json.Marshal(m); !bytes.Equal(b, got) {
				t.Errorf("%s: json.Marshal gives\n%s\nthe command\n%s", c.name, b, got)
			}
		}
	}
	if b, _ := json.Marshal(r); !bytes.Equal(b, func() []byte { x, _ := marshal(&r); return x }()) {
		t.Error("json.Marshal of a jsonRun value differs from the command's text")
	}
}

// Floats as encoding/json writes them.
func TestJSONFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 12.5, 1e-7, 1.5e-7, 1e21, 123456789012345678901234.0, 0.1, 100.0 / 3, 5e-324} {
		o := jsonOut{}
		w := o.object()
		w.optFloat("f", &f)
		w.end()
		want, _ := json.Marshal(map[string]float64{"f": f})
		if !bytes.Equal(o.b, want) {
			t.Errorf("%v: %s, want %s", f, o.b, want)
		}
	}
}

// A record too long to indent is written compact, as it is made, in more
// than one write, and that text is the whole record's; a short one is
// the same record indented.
func TestJSONStreamed(t *testing.T) {
	r := testRun()
	r.Threads = testThreads(4000)
	whole, _ := marshal(&r)
	w := &writeCounter{}
	var got bytes.Buffer
	if err := encodeJSON(io.MultiWriter(&got, w), &r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), append(whole, '\n')) {
		t.Errorf("streamed record (%d bytes) differs from the whole one (%d bytes)", got.Len(), len(whole))
	}
	if w.n < 2 || len(whole) <= indentUpTo {
		t.Errorf("a record of %d bytes was written in %d writes: want it streamed", len(whole), w.n)
	}
	small := testRun()
	got.Reset()
	if err := encodeJSON(&got, &small); err != nil {
		t.Fatal(err)
	}
	compact, _ := marshal(&small)
	var ind bytes.Buffer
	json.Indent(&ind, compact, "", "  ")
	if got.String() != ind.String()+"\n" {
		t.Errorf("a small record is not written indented:\n%.300s", got.String())
	}
}

// minThreadJSON is no more than the shortest thread's JSON: a record
// judged too long to indent by it is.
func TestMinThreadJSON(t *testing.T) {
	zero := uint64(0)
	for _, th := range []jsonThread{{}, {Cycles: &zero}} {
		if b, _ := marshal(jsonThreads{th}); len(b)-2 < minThreadJSON {
			n := len(b) - 2
			t.Errorf("%+v: %d bytes of JSON, fewer than minThreadJSON (%d)", th, n, minThreadJSON)
		}
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
			encodeJSON(&bytes.Buffer{}, &jsonProcess{Threads: ts})
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
