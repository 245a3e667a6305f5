package goroutines

// The fallback: thread CPU clocks sampled every few milliseconds. Each
// system reads the clocks its own way (threadClocks, in sampler_GOOS.go);
// what they read is turned into pieces here.

import "time"

type sample struct {
	t, cpu int64
}

type sampler struct {
	e     *engine
	clk   threadClocks
	every time.Duration
	last  map[int]sample
	lastT int64 // the previous sample round
	tids  []int
	why   string
}

func openSampler(e *engine) (*sampler, error) {
	s := &sampler{e: e, every: 2 * time.Millisecond, last: map[int]sample{}}
	tids, err := s.clk.list()
	if err != nil {
		return nil, err
	}
	s.tids = tids
	for _, tid := range tids {
		t := monoNow()
		if c, gone, err := s.clk.read(tid); err == nil && !gone {
			s.last[tid] = sample{t, c}
			e.mu.Lock() // the trace is being read meanwhile
			e.thread(int64(tid)).covered = true
			e.mu.Unlock()
		} else {
			s.clk.forget(tid)
		}
	}
	s.lastT = monoNow()
	return s, nil
}

func (s *sampler) period() time.Duration { return s.every }
func (s *sampler) exact() bool           { return false }
func (s *sampler) approx() string        { return s.why }

func (s *sampler) drain(final bool, end int64) {
	now := monoNow()
	if tids, err := s.clk.list(); err == nil { // every round: a new thread's first stretch starts at the previous round
		s.tids = tids
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	listed := make(map[int]bool, len(s.tids))
	for _, tid := range s.tids {
		listed[tid] = true
		s.sampleThread(tid)
	}
	// A thread sampled before and no longer listed has ended: where the
	// system still holds its clock (a Windows handle), its last stretch
	// is read once more.
	for tid := range s.last {
		if !listed[tid] {
			s.sampleThread(tid)
		}
	}
	s.lastT = now
	k := now
	if final && end < k {
		k = end
	}
	if k > e.known {
		e.known = k
	}
	e.advance()
}

// sampleThread turns the growth of thread tid's clock since its last
// sample into a piece. e.mu is held.
func (s *sampler) sampleThread(tid int) {
	e := s.e
	t := monoNow()
	c, gone, err := s.clk.read(tid)
	prev, ok := s.last[tid]
	if !ok || err == nil && !gone && c < prev.cpu {
		// New since the last round (or a new thread under an ended
		// one's id): its clock started at zero after lastT.
		prev = sample{s.lastT, 0}
	}
	// A clock read after the thread ended may have lost its count (Wine
	// reads zero): only growth is a piece.
	if err == nil && c >= prev.cpu {
		e.thread(int64(tid)).covered = true
		e.addPiece(int64(tid), prev.t, t, c-prev.cpu)
		s.last[tid] = sample{t, c}
	}
	if err != nil || gone {
		s.ended(tid, t) // ended: where its clock went with it, so did its last stretch
	}
}

// ended forgets thread tid, which ended by time t. e.mu is held.
func (s *sampler) ended(tid int, t int64) {
	delete(s.last, tid)
	s.clk.forget(tid)
	if th := s.e.threads[int64(tid)]; th != nil {
		th.goneAt = t
	}
}

func (s *sampler) close() { s.clk.close() }
