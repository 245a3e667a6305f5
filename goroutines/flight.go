package goroutines

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	xtrace "golang.org/x/exp/trace"
)

// A Watcher reads the execution trace through runtime/trace's flight
// recorder, which leaves trace.Start to the program. Each snapshot
// (FlightRecorder.WriteTo) forces a generation boundary and writes the
// recorder's window: the header, then whole generations, each a run of
// batches that name their generation and end with an end-of-generation
// byte. The snapshots overlap; the feed passes on only the generations it
// has not passed before, so the parser sees one trace, generation after
// generation. Where generations are missing (the recorder let them go
// before a snapshot took them), the stream ends and a new one starts with
// the header again: the engine counts the stretch between as lost.

const (
	evEventBatch        = 1  // tracev2.EvEventBatch: [generation, M, time, size]
	evExperimentalBatch = 49 // tracev2.EvExperimentalBatch: [experiment, generation, ...]
	headerSize          = 16 // "go 1.26 trace\x00\x00\x00"
)

type chunk struct {
	b    []byte
	eos  bool   // the stream ends here: lost generations follow
	lost uint64 // with eos: how many generations were lost (0: unknown)
}

// feed is the parser's io.Reader: the chunks the snapshots passed on.
type feed struct {
	mu      sync.Mutex
	items   []chunk
	bytes   int
	closed  bool
	wake    chan struct{}
	idle    func() // called before the reader waits for more
	lastEOS chunk
	started bool // the first stream's header is queued
	again   bool // the parser gave up on a stream: start another

	// The snapshot side's state (only the snapshot goroutine touches it).
	header  []byte
	lastGen uint64 // the newest generation passed on
	restart bool   // the next generation passed on starts a new stream
	lostGen uint64 // generations lost before it
	pending []chunk
	cur     uint64 // the generation of the batch being written
	take    bool
	first   bool
	maxQ    int // bytes queued for the parser beyond which a snapshot is dropped
}

func newFeed(maxQ int) *feed { return &feed{wake: make(chan struct{}, 1), maxQ: maxQ} }

// Read serves the queued chunks; a chunk with eos reads as io.EOF once.
func (f *feed) Read(p []byte) (int, error) {
	for {
		f.mu.Lock()
		if len(f.items) > 0 {
			it := &f.items[0]
			if it.eos {
				f.lastEOS = *it
				f.items = f.items[1:]
				f.mu.Unlock()
				return 0, io.EOF
			}
			n := copy(p, it.b)
			it.b = it.b[n:]
			f.bytes -= n
			if len(it.b) == 0 {
				f.items[0] = chunk{}
				f.items = f.items[1:]
			}
			f.mu.Unlock()
			return n, nil
		}
		closed := f.closed
		f.mu.Unlock()
		if closed {
			return 0, io.EOF
		}
		if f.idle != nil {
			f.idle()
		}
		<-f.wake
	}
}

func (f *feed) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.signal()
}

// skipStream drops what is queued up to the end of the current stream: the
// parser failed on it. The next snapshot starts a new one.
func (f *feed) skipStream() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.items) > 0 {
		it := f.items[0]
		f.items = f.items[1:]
		f.bytes -= len(it.b)
		if it.eos {
			f.lastEOS = it
			return
		}
	}
	f.again = true
}

// Write takes one snapshot's writes: the header, then one batch a write.
func (f *feed) Write(b []byte) (int, error) {
	if f.first {
		f.first = false
		if f.header == nil && len(b) >= headerSize {
			f.header = append([]byte(nil), b[:headerSize]...)
		}
		return len(b), nil
	}
	if len(b) == 1 { // end of generation
		if f.take {
			f.pending = append(f.pending, chunk{b: []byte{b[0]}})
			f.lastGen = f.cur
		}
		return 1, nil
	}
	gen, ok := batchGen(b)
	if !ok {
		return 0, errors.New("goroutines: a flight-recorder batch without a generation")
	}
	if gen != f.cur {
		f.cur = gen
		f.take = gen > f.lastGen
		if f.take && f.lastGen != 0 && gen != f.lastGen+1 && len(f.pending) == 0 {
			f.restart = true
			f.lostGen += gen - f.lastGen - 1
		}
	}
	if f.take {
		f.pending = append(f.pending, chunk{b: append([]byte(nil), b...)})
	}
	return len(b), nil
}

func batchGen(b []byte) (uint64, bool) {
	switch {
	case len(b) > 2 && b[0] == evExperimentalBatch:
		b = b[2:] // the experiment, one byte
	case len(b) > 1 && b[0] == evEventBatch:
		b = b[1:]
	default:
		return 0, false
	}
	gen, n := binary.Uvarint(b)
	return gen, n > 0
}

// snapshot takes the flight recorder's window and queues what is new.
func (f *feed) snapshot(fr interface {
	WriteTo(io.Writer) (int64, error)
}) error {
	f.first, f.cur, f.take, f.pending = true, 0, false, f.pending[:0]
	last, restart, lost := f.lastGen, f.restart, f.lostGen
	_, err := fr.WriteTo(f)
	if err != nil || f.header == nil {
		// Nothing of this snapshot was passed on: the next takes its
		// generations if the recorder still has them.
		f.pending, f.lastGen, f.restart, f.lostGen = f.pending[:0], last, restart, lost
		if err == nil {
			err = errors.New("goroutines: the flight recorder's snapshot had no header")
		}
		return err
	}
	// Only whole generations: a snapshot ends with an end-of-generation,
	// but do not trust a torn one.
	for len(f.pending) > 0 && len(f.pending[len(f.pending)-1].b) != 1 {
		f.pending = f.pending[:len(f.pending)-1]
	}
	if len(f.pending) == 0 {
		return nil
	}
	size := 0
	for _, c := range f.pending {
		size += len(c.b)
	}
	f.mu.Lock()
	defer f.signal()
	defer f.mu.Unlock()
	if f.bytes+size > f.maxQ {
		// The parser is that far behind: these generations are lost rather
		// than memory without bound. The stream ends here, so that the
		// engine counts the loss now, and the next starts afresh.
		for _, c := range f.pending {
			if len(c.b) == 1 {
				f.lostGen++
			}
		}
		f.items = append(f.items, chunk{eos: true, lost: f.lostGen})
		f.restart, f.lostGen = true, 0
		return nil
	}
	if !f.started || f.restart || f.again {
		// A new stream: after a loss (or a loss before the first), an end
		// of stream saying how many generations went first.
		if f.started || f.restart {
			f.items = append(f.items, chunk{eos: true, lost: f.lostGen})
		}
		f.items = append(f.items, chunk{b: f.header})
		f.bytes += len(f.header)
		f.started, f.restart, f.again, f.lostGen = true, false, false, 0
	}
	for _, c := range f.pending {
		f.items = append(f.items, c)
		f.bytes += len(c.b)
	}
	return nil
}

// parse reads streams from f until it closes, feeding e.
func (e *engine) parse(f *feed) {
	const batch = 256
	evs := make([]xtrace.Event, 0, batch)
	flush := func() {
		if len(evs) == 0 {
			return
		}
		e.apply(evs)
		clear(evs)
		evs = evs[:0]
	}
	f.idle = flush
	for {
		br := bufio.NewReaderSize(f, 64<<10)
		rd, err := xtrace.NewReader(br)
		for err == nil {
			var ev xtrace.Event
			if ev, err = rd.ReadEvent(); err == nil {
				evs = append(evs, ev)
				if len(evs) == batch {
					flush()
				}
			}
		}
		flush()
		f.mu.Lock()
		closed, eos := f.closed && len(f.items) == 0, f.lastEOS
		f.lastEOS = chunk{}
		f.mu.Unlock()
		if closed {
			return
		}
		if !eos.eos { // the parser failed inside the stream
			f.skipStream()
			f.mu.Lock()
			eos = f.lastEOS
			f.mu.Unlock()
		}
		e.mu.Lock()
		e.traceLost(eos.lost)
		e.mu.Unlock()
	}
}
