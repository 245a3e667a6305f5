package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// jsonThreads is a process's threads in JSON output, and jsonChildren
// the child processes of a recorded tree. A long list is written by hand
// rather than by encoding/json's reflection, which costs a large tree's
// record many ms after CMD's exit (docs/figures.md), and cputime's wall
// time is what a user of run measures. The
// text is the one encoding/json and escapeUnprintable give
// (TestJSONThreadsAsEncodingJSON, TestJSONChildrenAsEncodingJSON).
//
// encoding/json compacts, and so scans, whatever a MarshalJSON returns,
// so MarshalJSON returns a placeholder, a
// number no float64 formats to, and encodeJSON puts the list in its place
// (findSplices).
type jsonThreads []jsonThread

type jsonChildren []jsonChild

// spliceFrom is the shortest thread list written by hand: shorter ones
// are not worth the splice. A variable for the tests, which compare with
// encoding/json's own text. A list of children is written by hand
// whatever its length (at the top of a record: the lists within it are
// part of its text).
var spliceFrom = 64

// placeholderExp ends each placeholder: "<id>e-99999" is a valid JSON
// number that no float64 formats to, and no JSON string holds it
// unquoted after "threads": or "children": (a string's quotes are
// escaped).
const placeholderExp = "e-99999"

// jsonList is a list written by hand.
type jsonList interface {
	write(o *jsonOut)
	threads() int // how many threads it holds, at any depth
}

var (
	pendingMu  sync.Mutex
	pending    = map[uint64]jsonList{} // by placeholder id, until spliced
	pendingIDs atomic.Uint64
)

// placeholder registers l and returns its placeholder.
func placeholder(l jsonList) []byte {
	id := pendingIDs.Add(1)
	pendingMu.Lock()
	pending[id] = l
	pendingMu.Unlock()
	return append(strconv.AppendUint(nil, id, 10), placeholderExp...)
}

func (ts jsonThreads) MarshalJSON() ([]byte, error) {
	if ts == nil {
		return []byte("null"), nil
	}
	if len(ts) < spliceFrom {
		return json.Marshal([]jsonThread(ts))
	}
	return placeholder(ts), nil
}

func (cs jsonChildren) MarshalJSON() ([]byte, error) {
	switch {
	case cs == nil:
		return []byte("null"), nil
	case spliceFrom == math.MaxInt: // the tests' encoding/json's own text
		return json.Marshal([]jsonChild(cs))
	}
	return placeholder(cs), nil
}

func (ts jsonThreads) threads() int { return len(ts) }

func (cs jsonChildren) threads() int {
	n := 0
	for i := range cs {
		n += len(cs[i].Threads) + cs[i].Children.threads()
	}
	return n
}

// splice is one list to put in the place of b[start:end], its
// placeholder.
type splice struct {
	start, end int
	l          jsonList
}

// findSplices finds the placeholders of lists in b, in order, and takes
// their lists.
func findSplices(b []byte) []splice {
	var out []splice
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(placeholderExp))
		if j < 0 {
			return out
		}
		end := i + j
		start := end
		for start > 0 && b[start-1] >= '0' && b[start-1] <= '9' {
			start--
		}
		i = end + len(placeholderExp)
		if start == end || !bytes.HasSuffix(b[:start], []byte(`"threads":`)) && !bytes.HasSuffix(b[:start], []byte(`"children":`)) {
			continue
		}
		id, err := strconv.ParseUint(string(b[start:end]), 10, 64)
		if err != nil {
			continue
		}
		pendingMu.Lock()
		l, ok := pending[id]
		delete(pending, id)
		pendingMu.Unlock()
		if ok {
			out = append(out, splice{start, i, l})
		}
	}
}

// jsonOut is JSON text being made: appended to b, and, where w is set,
// written to w each time b passes 64 KiB, so that a record of thousands
// of tasks is not held whole in memory (1.5 MB of fresh pages for 5,000
// threads, each a fault, and each freed at exit).
type jsonOut struct {
	b     []byte
	w     io.Writer
	err   error // w's first
	clock rfc3339Cache
}

func (o *jsonOut) spill() {
	if o.w != nil && len(o.b) >= 64<<10 {
		o.flush()
	}
}

func (o *jsonOut) flush() {
	if o.err == nil && len(o.b) > 0 {
		_, o.err = o.w.Write(o.b)
	}
	o.b = o.b[:0]
}

// joinSplices returns b with the lists of ss in the places of their
// placeholders.
func joinSplices(b []byte, ss []splice) []byte {
	if len(ss) == 0 {
		return b
	}
	n := len(b)
	for _, s := range ss {
		n += s.l.threads() * 300
	}
	o := jsonOut{b: make([]byte, 0, n)}
	last := 0
	for _, s := range ss {
		o.b = append(o.b, b[last:s.start]...)
		s.l.write(&o)
		last = s.end
	}
	return append(o.b, b[last:]...)
}

// writeSplices writes b with the lists of ss in the places of their
// placeholders, and a newline, as it is made.
func writeSplices(w io.Writer, b []byte, ss []splice) error {
	o := jsonOut{b: make([]byte, 0, 80<<10), w: w}
	last := 0
	for _, s := range ss {
		o.b = append(o.b, b[last:s.start]...)
		o.spill()
		s.l.write(&o)
		last = s.end
	}
	o.b = append(append(o.b, b[last:]...), '\n')
	o.flush()
	return o.err
}

// minThreadJSON is the fewest bytes a thread's JSON takes (a zero thread's,
// its cycles 0 rather than null): TestMinThreadJSON checks it.
const minThreadJSON = 170

// appendJSON appends the list as encoding/json would write it, with the
// names escaped as escapeUnprintable leaves them.
func (ts jsonThreads) appendJSON(b []byte) []byte {
	o := jsonOut{b: b}
	ts.write(&o)
	return o.b
}

func (ts jsonThreads) write(o *jsonOut) {
	o.list(ts == nil, len(ts), func(i int) { o.b = ts[i].appendJSON(o.b, &o.clock) })
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

func (t *jsonThread) appendJSON(b []byte, clock *rfc3339Cache) []byte {
	b = append(b, `{"tid":`...)
	b = strconv.AppendInt(b, int64(t.TID), 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, t.Name)
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

func (cs jsonChildren) write(o *jsonOut) {
	o.list(cs == nil, len(cs), func(i int) {
		c := &cs[i]
		o.b = append(o.b, `{"pid":`...)
		o.b = strconv.AppendInt(o.b, int64(c.PID), 10)
		o.b = append(o.b, `,"name":`...)
		o.b = appendJSONString(o.b, c.Name)
		o.b = append(o.b, `,"creation_time":`...)
		o.b = appendOptString(o.b, c.CreationTime)
		o.b = append(o.b, `,"exit_time":`...)
		o.b = appendOptString(o.b, c.ExitTime)
		o.b = append(o.b, `,"user_ns":`...)
		o.b = strconv.AppendInt(o.b, c.UserNs, 10)
		o.b = append(o.b, `,"kernel_ns":`...)
		o.b = strconv.AppendInt(o.b, c.KernelNs, 10)
		o.b = append(o.b, `,"cycles":`...)
		o.b = appendOptUint(o.b, c.Cycles)
		o.b = append(o.b, `,"thread_count":`...)
		o.b = strconv.AppendInt(o.b, int64(c.ThreadCount), 10)
		o.b = append(o.b, `,"threads":`...)
		c.Threads.write(o)
		o.b = append(o.b, `,"access_denied":`...)
		o.b = strconv.AppendBool(o.b, c.AccessDenied)
		o.b = append(o.b, `,"ppid":`...)
		o.b = strconv.AppendInt(o.b, int64(c.PPID), 10)
		o.b = append(o.b, `,"children":`...)
		c.Children.write(o)
		o.b = append(o.b, '}')
	})
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
