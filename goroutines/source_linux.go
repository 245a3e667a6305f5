package goroutines

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// threadClock is the CPU clock id of thread tid of this process
// (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in the kernel's
// posix-cpu-timers.h): its exact runtime in ns, readable by its process.
func threadClock(tid int) int32 { return int32(^uint32(tid)<<3 | 6) }

func threadCPU(tid int) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(threadClock(tid), &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

func ownThreads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing the process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// perfEventOpen is unix.PerfEventOpen; tests replace it to refuse.
var perfEventOpen = unix.PerfEventOpen

func openSource(e *engine) (cpuSource, error) {
	p, err := openPerf(e)
	if err == nil {
		return p, nil
	}
	f, ferr := openSampler(e)
	if ferr != nil {
		return nil, fmt.Errorf("no CPU source: %w; and the fallback: %w", err, ferr)
	}
	e.mu.Lock()
	e.shareByRunning = true
	e.mu.Unlock()
	f.why = fmt.Sprintf("the kernel refused context-switch records (%v): CPU is each thread's CPU-clock growth between samples %v apart, shared among the goroutines that ran on it by running time, so a goroutine's figure is an estimate (runtime work in the same sample may count as theirs)", err, f.every)
	return f, nil
}

// ---- exact: perf context-switch records ----

const (
	perfPages  = 64 // data pages per CPU: 256 KiB, 10,000 switch records
	recordSize = 24 // header 8 + sample_id (pid, tid 8; time 8)
	// slack: a record stamped before the drain began may still be in
	// flight on another CPU; such records wait for the next drain.
	slack = int64(time.Millisecond)
)

type perfRing struct {
	cpu  int
	fd   int // the fd whose ring the CPU's other events share
	mem  []byte
	page *unix.PerfEventMmapPage
	data []byte
}

type switchRec struct {
	t   int64
	tid int32
	out bool
}

type pthread struct {
	seen    bool // a record or the clock has told its state
	on      bool
	onSince int64
	openT   int64 // events opened at
	cpu0    int64 // its CPU clock then
	initial bool  // existed at Start (new threads inherit and start off-CPU)
}

type perfSource struct {
	e       *engine
	fds     []int
	rings   []*perfRing
	th      map[int32]*pthread
	pending []switchRec
	known   int64
	lost    uint64
	buf     []byte
}

func openPerf(e *engine) (_ *perfSource, err error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	p := &perfSource{e: e, th: map[int32]*pthread{}}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	rings := map[int]*perfRing{}
	for _, c := range cpus {
		rings[c] = nil
	}
	// Threads created by a watched thread inherit its events; threads that
	// appear while we open are caught by listing again until none is new.
	for round := 0; ; round++ {
		tids, err := ownThreads()
		if err != nil {
			return nil, err
		}
		fresh := 0
		for _, tid := range tids {
			if p.th[int32(tid)] != nil {
				continue
			}
			fresh++
			st := &pthread{openT: monoNow(), initial: true}
			opened := 0
			for _, c := range cpus {
				fd, err := p.openOne(tid, c, rings)
				if errors.Is(err, unix.ESRCH) {
					break // the thread ended: nothing to watch
				}
				if errors.Is(err, unix.ENODEV) {
					continue // CPU went offline
				}
				if err != nil {
					return nil, fmt.Errorf("opening context-switch records for thread %d on CPU %d: %w", tid, c, err)
				}
				_ = fd
				opened++
			}
			if opened == 0 {
				continue
			}
			st.cpu0, _ = threadCPU(tid)
			p.th[int32(tid)] = st
			p.e.mu.Lock() // the trace is being read meanwhile
			p.e.thread(int64(tid)).covered = true
			p.e.mu.Unlock()
		}
		if fresh == 0 {
			break
		}
		if round > 100 {
			return nil, errors.New("the process keeps creating threads while its context-switch records are opened")
		}
	}
	for _, r := range rings {
		if r != nil {
			p.rings = append(p.rings, r)
		}
	}
	if len(p.rings) == 0 {
		return nil, errors.New("no CPU to watch")
	}
	p.known = monoNow()
	p.buf = make([]byte, 0, recordSize*64)
	return p, nil
}

func (p *perfSource) openOne(tid, cpu int, rings map[int]*perfRing) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitInherit | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv |
			unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitContextSwitch | unix.PerfBitWatermark,
		Wakeup:  perfPages * 4096 / 2, // wakeup_watermark: nobody waits, so wake nobody
		Clockid: unix.CLOCK_MONOTONIC,
	}
	fd, err := perfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	p.fds = append(p.fds, fd)
	if r := rings[cpu]; r != nil {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
			return -1, fmt.Errorf("sharing CPU %d's ring: %w", cpu, err)
		}
		return fd, nil
	}
	size := (1 + perfPages) * os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return -1, fmt.Errorf("mapping CPU %d's ring: %w", cpu, err)
	}
	r := &perfRing{cpu: cpu, fd: fd, mem: mem, page: (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))}
	r.data = mem[os.Getpagesize():]
	rings[cpu] = r
	return fd, nil
}

func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("listing CPUs: %w", err)
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return nil, fmt.Errorf("listing CPUs: /sys/devices/system/cpu/online reads %q", b)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func (p *perfSource) period() time.Duration { return 20 * time.Millisecond }
func (p *perfSource) exact() bool           { return true }
func (p *perfSource) approx() string        { return "" }

// read moves the records of one ring into p.pending.
func (p *perfSource) read(r *perfRing) {
	head := atomic.LoadUint64(&r.page.Data_head)
	tail := r.page.Data_tail
	size := uint64(len(r.data))
	for tail < head {
		off := tail % size
		var hdr [8]byte
		for i := range hdr {
			hdr[i] = r.data[(off+uint64(i))%size]
		}
		typ := *(*uint32)(unsafe.Pointer(&hdr[0]))
		misc := *(*uint16)(unsafe.Pointer(&hdr[4]))
		sz := uint64(*(*uint16)(unsafe.Pointer(&hdr[6])))
		if sz < 8 || tail+sz > head {
			break
		}
		rec := p.buf[:0]
		for i := uint64(0); i < sz; i++ {
			rec = append(rec, r.data[(off+i)%size])
		}
		switch typ {
		case unix.PERF_RECORD_SWITCH:
			if sz >= recordSize {
				tid := *(*int32)(unsafe.Pointer(&rec[12]))
				t := *(*int64)(unsafe.Pointer(&rec[16]))
				p.pending = append(p.pending, switchRec{t: t, tid: tid, out: misc&unix.PERF_RECORD_MISC_SWITCH_OUT != 0})
			}
		case unix.PERF_RECORD_LOST:
			if sz >= 24 {
				p.lost += *(*uint64)(unsafe.Pointer(&rec[16]))
			}
		}
		tail += sz
	}
	atomic.StoreUint64(&r.page.Data_tail, tail)
}

func (p *perfSource) drain(final bool, end int64) {
	now := monoNow()
	for _, r := range p.rings {
		p.read(r)
	}
	k := now - slack
	if final {
		k = end
	}
	slices.SortStableFunc(p.pending, func(a, b switchRec) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for ; n < len(p.pending); n++ {
		rec := p.pending[n]
		if rec.t > k {
			break
		}
		st := p.th[rec.tid]
		if st == nil { // a thread created since Start: it inherited the events and starts off-CPU
			st = &pthread{openT: rec.t}
			p.th[rec.tid] = st
		}
		switch {
		case !rec.out && !st.on:
			st.on, st.onSince, st.seen = true, rec.t, true
		case rec.out && st.on:
			e.addPiece(int64(rec.tid), st.onSince, rec.t, rec.t-st.onSince)
			st.on, st.seen = false, true
		case rec.out && !st.seen: // on the CPU since its events were opened
			e.addPiece(int64(rec.tid), st.openT, rec.t, rec.t-st.openT)
			st.seen = true
		}
	}
	rest := p.pending[n:]
	// Threads there at Start that no record has spoken of yet: either on a
	// CPU all along or off it all along. The next record says which, or
	// failing that the thread's CPU clock.
	for tid, st := range p.th {
		if st.seen || !st.initial {
			continue
		}
		if i := slices.IndexFunc(rest, func(r switchRec) bool { return r.tid == tid }); i >= 0 {
			st.seen, st.on, st.onSince = true, rest[i].out, st.openT
			continue
		}
		c, err := threadCPU(int(tid))
		st.seen = true
		if err == nil && c-st.cpu0 > (now-st.openT)/2 {
			st.on, st.onSince = true, st.openT
		}
	}
	for tid, st := range p.th {
		if !st.on || st.onSince >= k {
			continue
		}
		// A thread's last switch-out goes with its events when it exits:
		// one that was on the CPU and is gone ran from its last switch-in
		// to its end, which the trace knows (its last goroutine's end).
		if _, err := threadCPU(int(tid)); err != nil {
			st.on = false
			e.thread(int64(tid)).exitOn = st.onSince
			continue
		}
		e.addPiece(int64(tid), st.onSince, k, k-st.onSince)
		st.onSince = k
	}
	if final {
		p.pending = p.pending[:0]
	} else {
		p.pending = append(p.pending[:0], rest...)
	}
	p.known = k
	e.lost = p.lost
	if k > e.known {
		e.known = k
	}
	e.advance()
}

func (p *perfSource) close() {
	for _, r := range p.rings {
		unix.Munmap(r.mem)
	}
	p.rings = nil
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.fds = nil
}

// ---- fallback: sampled thread CPU clocks ----

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
