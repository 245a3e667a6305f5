package cli

import (
	"bytes"
	"encoding/json"
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
// (spliceThreads).
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

// spliceThreads replaces each placeholder of a thread list in b by the
// list's JSON.
func spliceThreads(b []byte) []byte {
	const key = `"threads":`
	var out []byte
	last := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(placeholderExp))
		if j < 0 {
			break
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
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+len(ts)*300)
		}
		out = append(out, b[last:start]...)
		out = ts.appendJSON(out)
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// appendJSON appends the list as encoding/json would write it, with the
// names escaped as escapeUnprintable leaves them.
func (ts jsonThreads) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		t := &ts[i]
		b = append(b, `{"tid":`...)
		b = strconv.AppendInt(b, int64(t.TID), 10)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, t.Name)
		b = append(b, `,"creation_time":`...)
		b = appendJSONString(b, t.CreationTime)
		b = append(b, `,"exit_time":`...)
		if t.ExitTime == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *t.ExitTime)
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
	return append(b, ']')
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

// appendRFC3339 appends t in UTC as rfc3339 formats it (nine digits of
// nanoseconds), without time.Format's layout parsing: 10,000 of them are
// in a record of 5,000 threads.
func appendRFC3339(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, rfc3339)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond(), 9)
	return append(b, 'Z')
}

// appendDigits appends the n low decimal digits of v (v ≥ 0), with
// leading zeros.
func appendDigits(b []byte, v, n int) []byte {
	var d [9]byte
	for i := n - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:n]...)
}
