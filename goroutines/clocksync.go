package goroutines

import (
	"context"
	"runtime/trace"
	"strconv"
	"sync/atomic"
)

// Where the runtime's nanotime is coarse (Windows: it advances a clock
// interrupt at a time, and under Wine lags by however late the wineserver
// updates it), the trace's clock snapshots, which pair the trace's time
// with nanotime, would put the samples tens of milliseconds off the
// segments. The CPU source then writes sync events into the trace itself
// (trace.Log, category syncCategory, a sequence number for message), each
// between two readings of a fine monoNow, and the engine takes its offset
// from them: the event's trace time less the middle of the two readings.

const syncCategory = "github.com/cputime/cputime/goroutines.sync"

// maxSyncMarks bounds the sync events logged and not yet seen in the trace
// (a Watcher's trace runs up to a few periods behind; a lost generation
// takes its events with it).
const maxSyncMarks = 1024

type syncMark struct {
	seq  uint64
	mono int64
}

// syncSeq numbers sync events process-wide: a Watcher and a recording
// write into one trace and each sees the other's.
var syncSeq atomic.Uint64

// logSync writes a sync event and notes when, on monoNow's clock. e.mu is
// held throughout, so the engine cannot meet the event before its note.
func (e *engine) logSync() {
	e.mu.Lock()
	defer e.mu.Unlock()
	seq := syncSeq.Add(1)
	m0 := monoNow()
	trace.Log(context.Background(), syncCategory, strconv.FormatUint(seq, 10))
	m1 := monoNow()
	if len(e.marks) == maxSyncMarks {
		e.marks = append(e.marks[:0], e.marks[1:]...)
	}
	e.marks = append(e.marks, syncMark{seq, m0 + (m1-m0)/2})
}

// syncSeen: the trace shows sync event msg at trace time t. From the
// first one on, the offset is theirs. e.mu is held.
func (e *engine) syncSeen(msg string, t int64) {
	seq, err := strconv.ParseUint(msg, 10, 64)
	if err != nil {
		return
	}
	for i, m := range e.marks {
		if m.seq == seq {
			e.offset, e.synced = t-m.mono, true
			e.marks = append(e.marks[:0], e.marks[i+1:]...) // the earlier ones were lost
			return
		}
	}
}
