package goroutines

// The fallback: thread CPU clocks sampled every few milliseconds.

import "time"

type sample struct {
	t, cpu int64
}

type sampler struct {
	e     *engine
	every time.Duration
	last  map[int]sample
	lastT int64 // the previous sample round
	tids  []int
	why   string
}

func openSampler(e *engine) (*sampler, error) {
	s := &sampler{e: e, every: 2 * time.Millisecond, last: map[int]sample{}}
	tids, err := ownThreads()
	if err != nil {
		return nil, err
	}
	s.tids = tids
	for _, tid := range tids {
		t := monoNow()
		if c, err := threadCPU(tid); err == nil {
			s.last[tid] = sample{t, c}
			e.mu.Lock() // the trace is being read meanwhile
			e.thread(int64(tid)).covered = true
			e.mu.Unlock()
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
	if tids, err := ownThreads(); err == nil { // every round: a new thread's first stretch starts at the previous round
		s.tids = tids
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tid := range s.tids {
		t := monoNow()
		c, err := threadCPU(tid)
		if err != nil {
			delete(s.last, tid) // ended: its last stretch is lost with it
			if th := e.threads[int64(tid)]; th != nil {
				th.goneAt = t
			}
			continue
		}
		prev, ok := s.last[tid]
		if !ok { // new since the last round: its clock started at zero after lastT
			prev = sample{s.lastT, 0}
		}
		e.thread(int64(tid)).covered = true
		e.addPiece(int64(tid), prev.t, t, c-prev.cpu)
		s.last[tid] = sample{t, c}
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

func (s *sampler) close() {}
