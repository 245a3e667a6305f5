package engine

import (
	"runtime"
	"sync"
)

// Reading one thread's stat and schedstat is mostly kernel work (path
// lookup and formatting; BenchmarkThreads/other/1000 with GOMAXPROCS=1 and
// perf, docs/figures.md). A scan of a large process is bound by
// kernel CPU time, not by us, so it runs on several CPUs: ids are cut into
// chunks that workers read concurrently, each with its own buffers, while the
// caller receives the results in the order of ids. Memory stays bounded by
// the chunks in flight, whatever the number of ids.

const (
	scanChunk       = 32 // ids per chunk
	scanParallelMin = 2 * scanChunk
	scanMaxWorkers  = 8
)

// scanResult is the outcome for one id: a value or an error.
type scanResult[T any] struct {
	v   T
	err error
}

// emit passes r to yield unless the task vanished during the scan: that is
// no error of the scan, and the task is skipped.
func (r scanResult[T]) emit(yield func(T, error) bool) bool {
	if r.err != nil && vanished(r.err) {
		return true
	}
	return yield(r.v, r.err)
}

type scanJob[T any] struct {
	ids  []int
	out  []scanResult[T]
	done chan struct{}
}

// scanOrdered calls read for each id and passes the results to yield in the
// order of ids, skipping the tasks that vanished. It returns false if yield
// asked to stop.
func scanOrdered[T any](ids []int, c scanConfig, read func(s *scanner, id int) (T, error), yield func(T, error) bool) bool {
	workers := min(runtime.GOMAXPROCS(0), scanMaxWorkers, (len(ids)+scanChunk-1)/scanChunk)
	if len(ids) < scanParallelMin || workers < 2 {
		s := &scanner{scanConfig: c}
		for _, id := range ids {
			v, err := read(s, id)
			if !(scanResult[T]{v, err}).emit(yield) {
				return false
			}
		}
		return true
	}

	inFlight := 2 * workers
	jobs := make(chan *scanJob[T], inFlight)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := &scanner{scanConfig: c}
			for j := range jobs {
				for i, id := range j.ids {
					v, err := read(s, id)
					j.out[i] = scanResult[T]{v: v, err: err}
				}
				close(j.done)
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)

	var queue []*scanJob[T]
	emit := func(j *scanJob[T]) bool {
		<-j.done
		for _, r := range j.out {
			if !r.emit(yield) {
				return false
			}
		}
		return true
	}
	for start := 0; start < len(ids); start += scanChunk {
		end := min(start+scanChunk, len(ids))
		j := &scanJob[T]{ids: ids[start:end], out: make([]scanResult[T], end-start), done: make(chan struct{})}
		jobs <- j // never blocks: at most inFlight jobs are queued
		queue = append(queue, j)
		if len(queue) == inFlight {
			if !emit(queue[0]) {
				return false
			}
			queue = queue[1:]
		}
	}
	for _, j := range queue {
		if !emit(j) {
			return false
		}
	}
	return true
}
