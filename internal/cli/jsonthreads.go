package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// jsonThreads is a process's threads in JSON output. A long list is
// written by hand rather than by encoding/json's reflection: run --tree of
// 5,000 threads spent 25 ms after CMD's exit encoding its record, and
// cputime's wall time is what a user of run measures. The text is the one
// encoding/json and escapeUnprintable give (TestJSONThreadsAsEncodingJSON).
//
// encoding/json compacts, and so scans, whatever a MarshalJSON returns
// (12 ms for a 1.1 MB record), so MarshalJSON returns a placeholder, a
// number no float64 formats to, and encodeJSON puts the list in its place
// (findSplices).
type jsonThreads []jsonThread

// spliceFrom is the shortest list written by hand: shorter ones are not
// worth the splice. A variable for the tests, which compare with
// encoding/json's own text.
var spliceFrom = 64

// placeholderExp ends each placeholder: "<id>e-99999" is a valid JSON
// number that no float64 formats to, and no JSON string holds it
// unquoted after "threads": (a string's quotes are escaped).
const placeholderExp = "e-99999"

var (
	pendingMu  sync.Mutex
	pending    = map[uint64]jsonThreads{} // by placeholder id, until spliced
	pendingIDs atomic.Uint64
)

func (ts jsonThreads) MarshalJSON() ([]byte, error) {
	if ts == nil {
		return []byte("null"), nil
	}
	if len(ts) < spliceFrom {
		return json.Marshal([]jsonThread(ts))
	}
	id := pendingIDs.Add(1)
	pendingMu.Lock()
	pending[id] = ts
	pendingMu.Unlock()
	return append(strconv.AppendUint(nil, id, 10), placeholderExp...), nil
}

// splice is one thread list to put in the place of b[start:end], its
// placeholder.
type splice struct {
	start, end int
	ts         jsonThreads
}

// findSplices finds the placeholders of thread lists in b, in order, and
// takes their lists.
func findSplices(b []byte) []splice {
	const key = `"threads":`
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
		if start == end || !bytes.HasSuffix(b[:start], []byte(key)) {
			continue
		}
		id, err := strconv.ParseUint(string(b[start:end]), 10, 64)
		if err != nil {
			continue
		}
		pendingMu.Lock()
		ts, ok := pending[id]
		delete(pending, id)
		pendingMu.Unlock()
		if ok {
			out = append(out, splice{start, i, ts})
		}
	}
}

// joinSplices returns b with the lists of ss in the places of their
// placeholders.
func joinSplices(b []byte, ss []splice) []byte {
	if len(ss) == 0 {
		return b
	}
	n := len(b)
	for _, s := range ss {
		n += len(s.ts) * 300
	}
	out := make([]byte, 0, n)
	last := 0
	for _, s := range ss {
		out = append(out, b[last:s.start]...)
		out = s.ts.appendJSON(out)
		last = s.end
	}
	return append(out, b[last:]...)
}

// writeSplices writes b with the lists of ss in the places of their
// placeholders, and a newline, through a buffer of 64 KiB: a record of
// thousands of threads is not held whole in memory (1.5 MB of fresh pages
// for 5,000 threads, each a fault, and each freed at exit).
func writeSplices(w io.Writer, b []byte, ss []splice) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var clock rfc3339Cache
	var chunk []byte
	last := 0
	for _, s := range ss {
		bw.Write(b[last:s.start])
		bw.WriteByte('[')
		for i := 0; i < len(s.ts); i += 256 {
			chunk = s.ts[i:min(i+256, len(s.ts))].appendItems(chunk[:0], &clock, i > 0)
			bw.Write(chunk)
		}
		bw.WriteByte(']')
		last = s.end
	}
	bw.Write(b[last:])
	bw.WriteByte('\n')
	return bw.Flush()
}

// minThreadJSON is the fewest bytes a thread's JSON takes (a zero thread's,
// its cycles 0 rather than null): TestMinThreadJSON checks it.
const minThreadJSON = 170

// appendJSON appends the list as encoding/json would write it, with the
// names escaped as escapeUnprintable leaves them.
func (ts jsonThreads) appendJSON(b []byte) []byte {
	var clock rfc3339Cache
	b = append(b, '[')
	b = ts.appendItems(b, &clock, false)
	return append(b, ']')
}

// appendItems appends the threads of the list, separated by commas, and
// with one before the first if comma is set.
func (ts jsonThreads) appendItems(b []byte, clock *rfc3339Cache, comma bool) []byte {
	for i := range ts {
		if i > 0 || comma {
			b = append(b, ',')
		}
		t := &ts[i]
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
		if t.Cycles == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendUint(b, *t.Cycles, 10)
		}
		b = append(b, `,"incomplete":`...)
		b = strconv.AppendBool(b, t.Incomplete)
		b = append(b, `,"split_shared":`...)
		b = strconv.AppendBool(b, t.SplitShared)
		b = append(b, `,"estimated_ns":`...)
		b = strconv.AppendInt(b, t.EstimatedNs, 10)
		b = append(b, '}')
	}
	return b
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
