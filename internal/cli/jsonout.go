package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"time"
)

// JSON output is written by hand, a field at a time, in the order and
// form encoding/json gives the same types (TestJSONAsEncodingJSON holds
// every type to it), as it is made: a record of thousands of tasks is
// megabytes, and encoding/json would build it whole by reflection before
// the first byte reached the user. Each record type's MarshalJSON gives
// the same text, so json.Marshal of any of them agrees with the command.

// jsonOut is JSON text being made, appended to b. Until b passes
// indentUpTo it is kept, to be indented for the eye at the end; past that
// the record is for tools, and it goes to w, compact, 64 KiB at a time, so
// that a large record is never held whole in memory.
type jsonOut struct {
	b      []byte
	w      io.Writer // where a large record streams; nil: keep it all in b
	stream bool      // b is being written to w as it fills
	err    error     // w's first
	clock  rfc3339Cache
}

// indentUpTo is the largest JSON output encodeJSON indents.
const indentUpTo = 256 << 10

func (o *jsonOut) spill() {
	switch {
	case o.w == nil:
	case !o.stream && len(o.b) > indentUpTo:
		o.stream = true
		o.flush()
	case o.stream && len(o.b) >= 64<<10:
		o.flush()
	}
}

func (o *jsonOut) flush() {
	if o.err == nil && len(o.b) > 0 {
		_, o.err = o.w.Write(o.b)
	}
	o.b = o.b[:0]
}

// jsonValue is a record of the JSON output.
type jsonValue interface {
	writeJSON(o *jsonOut)
}

// sized is a record that knows how many threads it lists: at
// minThreadJSON bytes each at least, one that is sure to pass indentUpTo
// is streamed from the start rather than held to see.
type sized interface {
	threadCount() int
}

func (ts jsonThreads) threadCount() int { return len(ts) }

func (cs jsonChildren) threadCount() int {
	n := 0
	for i := range cs {
		n += len(cs[i].Threads) + cs[i].Children.threadCount()
	}
	return n
}

func (ps jsonProcesses) threadCount() int {
	n := 0
	for i := range ps {
		n += len(ps[i].Threads)
	}
	return n
}

func (p *jsonProcess) threadCount() int { return len(p.Threads) }

func (r *jsonRun) threadCount() int { return len(r.Threads) + r.Children.threadCount() }

// encodeJSON writes v and a newline to w: indented when it is small
// enough for a reader, compact and as it is made when it is not. Every
// rune a terminal could act on is a \uXXXX escape (appendJSONString).
func encodeJSON(w io.Writer, v jsonValue) error {
	o := jsonOut{b: make([]byte, 0, 16<<10), w: w}
	if s, ok := v.(sized); ok && s.threadCount()*minThreadJSON > indentUpTo {
		o.b, o.stream = make([]byte, 0, 80<<10), true
	}
	v.writeJSON(&o)
	if !o.stream {
		var ind bytes.Buffer
		if err := json.Indent(&ind, o.b, "", "  "); err == nil {
			o.b = append(ind.Bytes(), '\n')
		} else {
			o.b = append(o.b, '\n')
		}
		_, err := w.Write(o.b)
		return err
	}
	o.b = append(o.b, '\n')
	o.flush()
	return o.err
}

// marshal is the JSON text of v, as MarshalJSON returns it.
func marshal(v jsonValue) ([]byte, error) {
	var o jsonOut
	v.writeJSON(&o)
	return o.b, nil
}

// obj writes one JSON object's fields, the first without a comma.
type obj struct {
	o *jsonOut
	n int
}

func (o *jsonOut) object() obj {
	o.b = append(o.b, '{')
	return obj{o: o}
}

func (w *obj) key(k string) *jsonOut {
	if w.n > 0 {
		w.o.b = append(w.o.b, ',')
	}
	w.n++
	w.o.b = append(w.o.b, '"')
	w.o.b = append(w.o.b, k...)
	w.o.b = append(w.o.b, '"', ':')
	return w.o
}

func (w *obj) end() { w.o.b = append(w.o.b, '}') }

func (w *obj) int(k string, v int64)     { o := w.key(k); o.b = strconv.AppendInt(o.b, v, 10) }
func (w *obj) uint(k string, v uint64)   { o := w.key(k); o.b = strconv.AppendUint(o.b, v, 10) }
func (w *obj) bool(k string, v bool)     { o := w.key(k); o.b = strconv.AppendBool(o.b, v) }
func (w *obj) string(k string, v string) { o := w.key(k); o.b = appendJSONString(o.b, v) }
func (w *obj) optString(k string, v *string) {
	o := w.key(k)
	o.b = appendOptString(o.b, v)
}
func (w *obj) optUint(k string, v *uint64) { o := w.key(k); o.b = appendOptUint(o.b, v) }

func (w *obj) optInt(k string, v *int64) {
	o := w.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = strconv.AppendInt(o.b, *v, 10)
}

func (w *obj) optIntOf(k string, v *int) {
	if v == nil {
		w.optInt(k, nil)
		return
	}
	x := int64(*v)
	w.optInt(k, &x)
}

func (w *obj) optBool(k string, v *bool) {
	o := w.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = strconv.AppendBool(o.b, *v)
}

// optFloat writes v as encoding/json does: shortest repr, 'f' format but
// for very small or large magnitudes, and exponents without a leading 0.
func (w *obj) optFloat(k string, v *float64) {
	o := w.key(k)
	if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		o.b = append(o.b, "null"...)
		return
	}
	f := *v
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	o.b = strconv.AppendFloat(o.b, f, format, -1, 64)
	if format == 'e' {
		if n := len(o.b); n >= 4 && o.b[n-4] == 'e' && o.b[n-3] == '-' && o.b[n-2] == '0' {
			o.b[n-2] = o.b[n-1]
			o.b = o.b[:n-1]
		}
	}
}

func (w *obj) strings(k string, v []string) {
	o := w.key(k)
	o.list(v == nil, len(v), func(i int) { o.b = appendJSONString(o.b, v[i]) })
}

func (w *obj) ints(k string, v []int) {
	o := w.key(k)
	o.list(v == nil, len(v), func(i int) { o.b = strconv.AppendInt(o.b, int64(v[i]), 10) })
}

// list writes a JSON list of n items, each by item(i), or null.
func (o *jsonOut) list(null bool, n int, item func(i int)) {
	if null {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = append(o.b, '[')
	for i := range n {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		item(i)
		o.spill()
	}
	o.b = append(o.b, ']')
}

// jsonThreads is a process's threads, jsonChildren the child processes of
// a recorded tree, jsonProcesses the listing.
type (
	jsonThreads   []jsonThread
	jsonChildren  []jsonChild
	jsonProcesses []jsonProcess
)

func (ts jsonThreads) MarshalJSON() ([]byte, error)   { return marshal(ts) }
func (cs jsonChildren) MarshalJSON() ([]byte, error)  { return marshal(cs) }
func (ps jsonProcesses) MarshalJSON() ([]byte, error) { return marshal(ps) }
func (r jsonRun) MarshalJSON() ([]byte, error)        { return marshal(&r) }

func (ts jsonThreads) writeJSON(o *jsonOut) {
	o.list(ts == nil, len(ts), func(i int) { o.b = ts[i].appendJSON(o.b, &o.clock) })
}

// minThreadJSON is the fewest bytes a thread's JSON takes (a zero thread's,
// its cycles 0 rather than null): TestMinThreadJSON checks it.
const minThreadJSON = 170

func (ps jsonProcesses) writeJSON(o *jsonOut) {
	o.list(ps == nil, len(ps), func(i int) { ps[i].writeJSON(o) })
}

func (p *jsonProcess) writeJSON(o *jsonOut) {
	w := o.object()
	p.fields(&w)
	w.end()
}

// fields writes the process's fields, which jsonChild and jsonRun begin
// with (embedded, as encoding/json writes an embedded struct's).
func (p *jsonProcess) fields(w *obj) {
	w.int("pid", int64(p.PID))
	w.string("name", string(p.Name))
	w.optString("creation_time", p.CreationTime)
	w.optString("exit_time", p.ExitTime)
	w.int("user_ns", p.UserNs)
	w.int("kernel_ns", p.KernelNs)
	w.optUint("cycles", p.Cycles)
	w.int("thread_count", int64(p.ThreadCount))
	p.Threads.writeJSON(w.key("threads"))
	w.bool("access_denied", p.AccessDenied)
}

func (cs jsonChildren) writeJSON(o *jsonOut) {
	o.list(cs == nil, len(cs), func(i int) {
		c := &cs[i]
		w := o.object()
		c.fields(&w)
		w.int("ppid", int64(c.PPID))
		c.Children.writeJSON(w.key("children"))
		w.end()
	})
}

func (r *jsonRun) writeJSON(o *jsonOut) {
	w := o.object()
	r.fields(&w)
	w.bool("final_exact", r.FinalExact)
	w.optInt("total_user_ns", r.TotalUserNs)
	w.optInt("total_kernel_ns", r.TotalKernelNs)
	w.optString("total_precision", r.TotalPrecision)
	r.Children.writeJSON(w.key("children"))
	r.Recording.writeJSON(w.key("recording"))
	r.Exit.writeJSON(w.key("exit"))
	w.optInt("wall_ns", r.WallNs)
	w.optFloat("cpu_percent", r.CPUPercent)
	w.optInt("max_rss_kib", r.MaxRSSKiB)
	w.optInt("voluntary_context_switches", r.VoluntaryContextSwitches)
	w.optInt("involuntary_context_switches", r.InvoluntaryContextSwitches)
	w.optBool("subreaper", r.Subreaper)
	w.optIntOf("orphans_reaped", r.OrphansReaped)
	w.optIntOf("orphans_running", r.OrphansRunning)
	w.key("by_command").list(r.ByCommand == nil, len(r.ByCommand), func(i int) { r.ByCommand[i].writeJSON(o) })
	w.optInt("tree_peak_memory_kib", r.TreePeakMemoryKiB)
	w.optString("tree_peak_memory_source", r.TreePeakMemorySource)
	r.Parallelism.writeJSON(w.key("parallelism"))
	w.end()
}

func (e *jsonExitStatus) writeJSON(o *jsonOut) {
	if e == nil {
		o.b = append(o.b, "null"...)
		return
	}
	w := o.object()
	w.optIntOf("code", e.Code)
	w.optIntOf("signal", e.Signal)
	w.optString("signal_name", e.SignalName)
	w.bool("core_dumped", e.CoreDumped)
	w.end()
}

func (r *jsonRecording) writeJSON(o *jsonOut) {
	if r == nil {
		o.b = append(o.b, "null"...)
		return
	}
	w := o.object()
	w.bool("complete", r.Complete)
	w.strings("problems", r.Problems)
	w.string("source", r.Source)
	w.string("events", r.Events)
	w.string("source_note", r.SourceNote)
	w.int("steal_ns", r.StealNs)
	w.int("excess_ns", r.ExcessNs)
	w.int("shortfall_ns", r.ShortfallNs)
	w.uint("lost_records", r.LostRecords)
	w.int("incomplete_threads", int64(r.IncompleteThreads))
	w.int("running_threads", int64(r.RunningThreads))
	w.uint("corrupt_stretches", r.CorruptStretches)
	w.bool("context_swap", r.ContextSwap)
	w.int("buffer_bytes", int64(r.BufferBytes))
	w.int("processes", int64(r.Processes))
	w.int("threads", int64(r.Threads))
	w.string("error", r.Error)
	w.optIntOf("missed_processes", r.MissedProcesses)
	w.ints("missed_pids", r.MissedPIDs)
	w.optIntOf("running_processes", r.RunningProcesses)
	w.optIntOf("job_processes", r.JobProcesses)
	w.string("note", r.Note)
	w.end()
}

func (t *jsonThread) appendJSON(b []byte, clock *rfc3339Cache) []byte {
	b = append(b, `{"tid":`...)
	b = strconv.AppendInt(b, int64(t.TID), 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, string(t.Name))
	b = append(b, `,"creation_time":"`...)
	b = clock.append(b, time.Time(t.CreationTime))
	b = append(b, `","exit_time":`...)
	if e := time.Time(t.ExitTime); e.IsZero() {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = clock.append(b, e)
		b = append(b, '"')
	}
	b = append(b, `,"user_ns":`...)
	b = strconv.AppendInt(b, t.UserNs, 10)
	b = append(b, `,"kernel_ns":`...)
	b = strconv.AppendInt(b, t.KernelNs, 10)
	b = append(b, `,"cycles":`...)
	b = appendOptUint(b, t.Cycles)
	b = append(b, `,"incomplete":`...)
	b = strconv.AppendBool(b, t.Incomplete)
	b = append(b, `,"split_shared":`...)
	b = strconv.AppendBool(b, t.SplitShared)
	b = append(b, `,"estimated_ns":`...)
	b = strconv.AppendInt(b, t.EstimatedNs, 10)
	return append(b, '}')
}

func appendOptUint(b []byte, n *uint64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return strconv.AppendUint(b, *n, 10)
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendJSONString appends s as a JSON string: as is when every byte is
// printable ASCII that encoding/json writes unescaped (the usual thread
// name), else as encoding/json and escapeUnprintable write it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, escapeUnprintable(q)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonName is the name of a task in JSON output: as encoding/json writes
// a string, with every rune a terminal could act on escaped as well
// (appendJSONString), however the record is encoded.
type jsonName string

func (n jsonName) MarshalJSON() ([]byte, error) { return appendJSONString(nil, string(n)), nil }

// jsonInstant is an instant in JSON output: rfc3339, in UTC.
type jsonInstant time.Time

func (t jsonInstant) MarshalJSON() ([]byte, error) {
	var c rfc3339Cache
	return append(c.append(append(make([]byte, 0, len(rfc3339)+2), '"'), time.Time(t)), '"'), nil
}

// jsonOptInstant is a jsonInstant that is null when zero (an exit that
// has not happened, or is not known).
type jsonOptInstant time.Time

func (t jsonOptInstant) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return jsonInstant(t).MarshalJSON()
}

// UnmarshalJSON reads what MarshalJSON writes (the tests decode records
// into the output's own types).
func (t *jsonInstant) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil {
		*t = jsonInstant{}
		return nil
	}
	x, err := time.Parse(time.RFC3339Nano, *s)
	*t = jsonInstant(x)
	return err
}

func (t *jsonOptInstant) UnmarshalJSON(b []byte) error {
	return (*jsonInstant)(t).UnmarshalJSON(b)
}

// appendRFC3339 appends t in UTC as rfc3339 formats it (nine digits of
// nanoseconds).
func appendRFC3339(b []byte, t time.Time) []byte {
	var c rfc3339Cache
	return c.append(b, t)
}

// rfc3339Cache formats instants as rfc3339 does, without time.Format's
// layout parsing, and keeps the text of the last second: a record's
// threads are dated in runs within one second (10,000 instants in a
// record of 5,000 threads).
type rfc3339Cache struct {
	sec    int64 // Unix seconds of prefix; prefix empty: none yet
	prefix []byte
}

func (c *rfc3339Cache) append(b []byte, t time.Time) []byte {
	t = t.UTC()
	if sec := t.Unix(); len(c.prefix) == 0 || sec != c.sec {
		year, month, day := t.Date()
		if year < 0 || year > 9999 {
			return t.AppendFormat(b, rfc3339)
		}
		hour, minute, second := t.Clock()
		p := c.prefix[:0]
		p = appendDigits(p, year, 4)
		p = append(p, '-')
		p = appendDigits(p, int(month), 2)
		p = append(p, '-')
		p = appendDigits(p, day, 2)
		p = append(p, 'T')
		p = appendDigits(p, hour, 2)
		p = append(p, ':')
		p = appendDigits(p, minute, 2)
		p = append(p, ':')
		p = appendDigits(p, second, 2)
		c.prefix, c.sec = append(p, '.'), sec
	}
	b = append(b, c.prefix...)
	b = appendDigits(b, t.Nanosecond(), 9)
	return append(b, 'Z')
}

// appendDigits appends the n low decimal digits of v (v ≥ 0, n ≤ 10),
// with leading zeros, two at a time.
func appendDigits(b []byte, v, n int) []byte {
	var d [10]byte
	i := n
	for i >= 2 {
		q := v / 100
		r := v - q*100
		d[i-1], d[i-2] = byte('0'+r%10), byte('0'+r/10)
		v, i = q, i-2
	}
	if i == 1 {
		d[0] = byte('0' + v%10)
	}
	return append(b, d[:n]...)
}
