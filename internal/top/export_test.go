package top

import (
	"github.com/cputime/cputime/sampler"
)

// BenchRefresher returns a function that does what one batch refresh of
// "top -b -H -p PIDS" does, writing the frame to a buffer, and returns the
// number of rows; done closes its sampler.
func BenchRefresher(pids []int) (refresh func() int, done func()) {
	s, err := sampler.New(sampler.Options{PIDs: pids, Threads: true})
	if err != nil {
		panic(err)
	}
	m := newModel()
	var mach machineReader
	var x sampler.Sample
	var rows []row
	var out []byte
	return func() int {
		if err := s.RefreshInto(&x); err != nil {
			panic(err)
		}
		rows = m.build(&x, true, rows[:0])
		sortRows(rows, byCPU)
		f := frame{at: x.Time, interval: x.Interval, first: x.First, threads: true, rows: rows, machine: mach.read(&x)}
		f.newN, f.exitedN, f.deniedN = counts(rows)
		out = appendFrame(out[:0], &f, byCPU, 0, 0)
		return len(rows)
	}, func() { s.Close() }
}
