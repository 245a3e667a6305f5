package goroutines

// Exact mode: perf context-switch records on every thread of the process.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/perfring"
	"github.com/cputime/cputime/internal/procfs"
)

const (
	perfPages  = 64 // data pages per CPU: 256 KiB, 10,000 switch records
	recordSize = 24 // header 8 + sample_id (pid, tid 8; time 8)
	// slack: a record stamped before the drain began may still be in
	// flight on another CPU; such records wait for the next drain.
	slack = int64(time.Millisecond)
)

// perfRing is one CPU's ring buffer, shared by every watched thread's
// event on that CPU (PERF_EVENT_IOC_SET_OUTPUT).
type perfRing struct {
	*perfring.Ring
	cpu int
	fd  int // the fd whose ring the CPU's other events share
}

type switchRec struct {
	t   int64
	tid int32
	out bool
}

type pthread struct {
	raw     []piece // on-CPU intervals not yet handed over, unscaled
	lastR   int64   // the last clock reading handed over: its time and value
	lastC   int64
	pend    reading // a reading waiting for the records up to it
	next    reading // this drain's reading
	read    bool    // next was read at the start of this drain
	dead    bool
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
	every   time.Duration // how often to drain; 0: 20 ms
	ncpu    int
	// maxEvents bounds threads × CPUs, the perf events the kernel keeps
	// (each thread there at open and each thread created since holds one
	// per CPU); past it the source hands over to fb, sampled clocks.
	maxEvents int
	fb        atomic.Pointer[sampler] // set by drain, read by Snapshot
}

// errPerfCap: the process has more threads than the caps on perf events
// allow (WithMaxPerfEvents, RLIMIT_NOFILE).
var errPerfCap = errors.New("past the cap on perf events")

// fdShare: exact mode takes at most a quarter of the file descriptors the
// process may open (RLIMIT_NOFILE's soft limit), leaving the rest to the
// program.
const fdShare = 4

func openPerf(e *engine) (_ *perfSource, err error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	maxEvents := e.maxEvents
	e.mu.Unlock()
	if maxEvents <= 0 { // a recording
		maxEvents = DefaultMaxPerfEvents
	}
	p := &perfSource{e: e, th: map[int32]*pthread{}, ncpu: len(cpus), maxEvents: maxEvents}
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
	// Each listing holds every thread alive throughout it (LiveTIDs).
	gone := map[int]bool{}
	for round := 0; ; round++ {
		tids, err := liveOwnThreads()
		if err != nil {
			return nil, err
		}
		if round == 0 {
			if err := p.budget(len(tids)); err != nil {
				return nil, err
			}
		}
		fresh := 0
		for _, tid := range tids {
			if p.th[int32(tid)] != nil || gone[tid] {
				continue
			}
			fresh++
			st := &pthread{openT: monoNow(), initial: true}
			opened := 0
			for _, c := range cpus {
				_, err := p.openOne(tid, c, rings)
				if errors.Is(err, unix.ESRCH) {
					break // the thread ended: nothing to watch
				}
				if errors.Is(err, unix.ENODEV) {
					continue // CPU went offline
				}
				if err != nil {
					return nil, fmt.Errorf("opening context-switch records for thread %d on CPU %d: %w", tid, c, err)
				}
				opened++
			}
			if opened == 0 {
				gone[tid] = true
				continue
			}
			st.cpu0, _ = threadCPU(tid)
			st.lastR, st.lastC = monoNow(), st.cpu0
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
	return p, nil
}

// switchAttr is the event each watched thread has on each CPU: a dummy
// software event whose records are its context switches, inherited by the
// threads it creates.
func switchAttr() unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_DUMMY,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type: unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME,
		Bits: unix.PerfBitInherit | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv |
			unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitContextSwitch | unix.PerfBitWatermark,
		Wakeup:  uint32(perfPages * os.Getpagesize() / 2), // wakeup_watermark: nobody waits, so wake nobody
		Clockid: unix.CLOCK_MONOTONIC,
	}
}

func (p *perfSource) openOne(tid, cpu int, rings map[int]*perfRing) (int, error) {
	attr := switchAttr()
	fd, err := unix.PerfEventOpen(&attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
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
	ring, err := perfring.Map(fd, perfPages)
	if err != nil {
		return -1, fmt.Errorf("mapping CPU %d's ring: %w", cpu, err)
	}
	rings[cpu] = &perfRing{Ring: ring, cpu: cpu, fd: fd}
	return fd, nil
}

func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("listing CPUs: %w", err)
	}
	cpus, err := procfs.ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("listing CPUs: /sys/devices/system/cpu/online: %w", err)
	}
	return cpus, nil
}

func (p *perfSource) period() time.Duration {
	if p.every > 0 {
		return p.every
	}
	return 20 * time.Millisecond
}
func (p *perfSource) exact() bool { return p.fb.Load() == nil }
func (p *perfSource) approx() string {
	if fb := p.fb.Load(); fb != nil {
		return fb.why
	}
	return ""
}

// budget says whether threads threads' events fit the caps: threads × CPUs
// at most maxEvents, and the file descriptors that opening them takes at
// most a quarter of RLIMIT_NOFILE's soft limit.
func (p *perfSource) budget(threads int) error {
	n := threads * p.ncpu
	if n > p.maxEvents {
		return fmt.Errorf("%w: %d threads × %d CPUs need %d, the cap is %d (about %.1f MB of kernel memory; WithMaxPerfEvents)", errPerfCap, threads, p.ncpu, n, p.maxEvents, float64(p.maxEvents)*1352/1e6)
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur != unix.RLIM_INFINITY && uint64(n) > rl.Cur/fdShare {
		return fmt.Errorf("%w: %d threads × %d CPUs need %d file descriptors, more than a quarter of the %d the process may open (RLIMIT_NOFILE)", errPerfCap, threads, p.ncpu, n, rl.Cur)
	}
	return nil
}

// read moves the switch records of one ring into p.pending.
func (p *perfSource) read(r *perfRing) {
	r.Read(func(rec []byte) bool {
		if binary.NativeEndian.Uint32(rec) == unix.PERF_RECORD_SWITCH && len(rec) >= recordSize {
			misc := binary.NativeEndian.Uint16(rec[4:])
			tid := int32(binary.NativeEndian.Uint32(rec[12:]))
			t := int64(binary.NativeEndian.Uint64(rec[16:]))
			p.pending = append(p.pending, switchRec{t: t, tid: tid, out: misc&unix.PERF_RECORD_MISC_SWITCH_OUT != 0})
		}
		return true
	})
}

// drain reads the rings and hands the engine each thread's on-CPU
// intervals, scaled so that they add up to the thread's CPU clock's growth
// between two readings of it. The intervals say when a thread ran; its
// clock says how much CPU it got, which is less than its on-CPU wall time
// by what the hypervisor stole (steal time) and, where the kernel accounts
// it, what interrupts took: the kernel leaves both out of a task's runtime.
// A reading taken at one drain is used at the next, once the records up to
// it are all in.
func (p *perfSource) drain(final bool, end int64) {
	if fb := p.fb.Load(); fb != nil {
		fb.drain(final, end)
		return
	}
	p.drainRecords(final, end)
	if final {
		return
	}
	live := 0
	for _, st := range p.th {
		if !st.dead {
			live++
		}
	}
	if live*p.ncpu > p.maxEvents { // threads created since open inherit events, with no descriptor
		p.fallBack(p.budget(live))
	}
}

// fallBack hands over to sampled thread clocks for good: the process has
// grown past the cap on perf events. Everything the records told up to
// now goes to the engine, the events are closed (which frees the
// inherited ones too), and the sampler starts from each thread's last
// clock reading, so no CPU falls between the two.
func (p *perfSource) fallBack(why error) {
	end := monoNow()
	p.drainRecords(true, end)
	s := &sampler{e: p.e, every: p.period(), last: map[int]sample{}, lastT: end}
	for tid, st := range p.th {
		if !st.dead {
			s.last[int(tid)] = sample{st.lastR, st.lastC}
			s.tids = append(s.tids, int(tid))
		}
	}
	p.close()
	p.th, p.pending = nil, nil
	s.why = fmt.Sprintf("context-switch records stopped %v after the start: %v; since then CPU is %s", time.Duration(end-p.e.winStart).Round(time.Millisecond), why, sampledCPU(s.every))
	p.e.mu.Lock()
	p.e.shareByRunning = true
	p.e.mu.Unlock()
	p.fb.Store(s)
}

// drainRecords: see drain.
func (p *perfSource) drainRecords(final bool, end int64) {
	now := monoNow()
	for tid, st := range p.th {
		if !st.dead {
			st.next, st.read = readClock(tid), true
		}
	}
	k := now - slack
	if final {
		k = monoNow() // after the readings: every record up to them is in the rings now
	}
	for _, r := range p.rings {
		p.read(r)
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
		if st == nil { // a thread created since Start: it inherited the events and starts off-CPU, its clock at zero
			st = &pthread{openT: rec.t, lastR: rec.t}
			p.th[rec.tid] = st
			e.thread(int64(rec.tid)).covered = true
		}
		if st.dead {
			continue
		}
		switch {
		case !rec.out && !st.on:
			st.on, st.onSince, st.seen = true, rec.t, true
		case rec.out && st.on:
			st.raw = append(st.raw, piece{st.onSince, rec.t, rec.t - st.onSince, -1})
			st.on, st.seen = false, true
		case rec.out && !st.seen: // on the CPU since its events were opened
			st.raw = append(st.raw, piece{st.openT, rec.t, rec.t - st.openT, -1})
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
		st.seen = true
		if st.next.ok && st.next.c-st.cpu0 > (st.next.t-st.openT)/2 {
			st.on, st.onSince = true, st.openT
		}
	}
	known := k
	for tid, st := range p.th {
		if st.dead {
			continue
		}
		if !st.read { // first seen in this drain's records
			st.next = readClock(tid)
		}
		st.read = false
		if !st.next.ok {
			// Gone: its last readings are lost with it. What the records
			// showed counts as on-CPU time; a thread on a CPU when it
			// exited (its switch-out goes with its events) ran to its
			// end, which the trace knows (its last goroutine's end).
			e.exited++
			for _, r := range st.raw {
				a := max(r.start, e.winStart)
				e.unscaled += max(0, r.end-a)
				e.addPiece(int64(tid), r.start, r.end, r.cpu)
			}
			if st.on {
				e.thread(int64(tid)).exitOn = st.onSince
			}
			st.raw, st.on, st.dead = nil, false, true
			e.thread(int64(tid)).goneAt = st.next.t
			if e.w != nil { // watching for hours: forget it (a late record of it counts as a new thread's)
				delete(p.th, tid)
			}
			continue
		}
		if st.on && st.onSince < k { // alive, so on the CPU up to k
			st.raw = append(st.raw, piece{st.onSince, k, k - st.onSince, -1})
			st.onSince = k
		}
		if st.pend.ok && st.pend.t <= k {
			p.emit(tid, st, st.pend)
			st.pend.ok = false
		}
		if final {
			p.emit(tid, st, st.next)
		} else if !st.pend.ok {
			st.pend = st.next
		}
		known = min(known, st.lastR)
	}
	if final {
		p.pending = p.pending[:0]
		known = end
	} else {
		p.pending = append(p.pending[:0], rest...)
	}
	e.lost = 0
	for _, r := range p.rings {
		e.lost += r.Lost()
	}
	if known > e.known {
		e.known = known
	}
	e.advance()
}

type reading struct {
	t, c int64
	ok   bool
}

func readClock(tid int32) reading {
	t := monoNow()
	c, err := threadCPU(int(tid))
	return reading{t, c, err == nil}
}

// emit hands the engine tid's on-CPU intervals from its last reading to r,
// scaled to its clock's growth over that span.
func (p *perfSource) emit(tid int32, st *pthread, r reading) {
	from, to := st.lastR, r.t
	if to <= from {
		return
	}
	cpu := r.c - st.lastC
	var w int64
	for _, x := range st.raw {
		w += max(0, min(x.end, to)-max(x.start, from))
	}
	switch {
	case w > 0 && cpu > 0:
		// f is below 1 by the steal and interrupt time in the span, and
		// above 1 on a thread that switches every few microseconds: the
		// kernel charges it for more of each switch than its records
		// bracket. Either way the thread's total is its clock's.
		f := float64(cpu) / float64(w)
		for _, x := range st.raw {
			a, b := max(x.start, from), min(x.end, to)
			if b > a {
				p.e.addPiece(int64(tid), a, b, int64(float64(b-a)*f+0.5))
			}
		}
	case cpu > 0: // CPU the records did not show (lost ones): spread over the span
		p.e.addPiece(int64(tid), from, to, min(cpu, to-from))
	}
	keep := st.raw[:0]
	for _, x := range st.raw {
		if x.end > to {
			x.start = max(x.start, to)
			keep = append(keep, x)
		}
	}
	st.raw = keep
	st.lastR, st.lastC = to, r.c
}

func (p *perfSource) close() {
	for _, r := range p.rings {
		r.Close()
	}
	p.rings = nil
	for _, fd := range p.fds {
		unix.Close(fd)
	}
	p.fds = nil
}
