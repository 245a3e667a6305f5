package recorder

import (
	"os"
	"strconv"
	"time"

	"github.com/cputime/cputime/internal/procfs"
)

// memorySampler keeps the tree's memory at its highest where no cgroup
// keeps it: every StatInterval the resident sets of the processes with a
// task not yet seen to exit, added up. An estimate: a page two processes
// share (their libraries, what a fork left shared) counts once for each,
// and a peak between two samples is missed.
type memorySampler struct {
	on   bool
	last time.Time
	peak int64 // KiB
	n    int
	seen map[int]bool
	buf  []byte
}

var pageKiB = uint64(os.Getpagesize() / 1024)

func (m *memorySampler) sample(live []*task) {
	m.last = time.Now()
	if m.seen == nil {
		m.seen, m.buf = map[int]bool{}, make([]byte, 0, 128)
	}
	clear(m.seen)
	var pages uint64
	for _, t := range live {
		if m.seen[t.pid] {
			continue
		}
		m.seen[t.pid] = true
		b, err := procfs.ReadFileInto("/proc/"+strconv.Itoa(t.pid)+"/statm", m.buf[:0])
		if err != nil {
			continue // exited meanwhile
		}
		m.buf = b
		if s, err := procfs.ParseStatm(b); err == nil {
			pages += s.Resident
		}
	}
	m.n++
	m.peak = max(m.peak, int64(pages*pageKiB))
}
