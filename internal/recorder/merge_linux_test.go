package recorder

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// mergeRuns gives what one stable sort of all the records by time gives,
// whatever the number of runs (one per CPU's buffer, and the records kept
// from the previous round), empty runs and equal times included.
func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var scratch []pendingRecord
	for trial := range 2000 {
		nruns := 1 + rng.IntN(9)
		var recs []pendingRecord
		var runs []int
		off := 0
		for range nruns {
			n := rng.IntN(6)
			if rng.IntN(4) == 0 {
				n = 0
			}
			at := uint64(rng.IntN(5))
			for range n {
				at += uint64(rng.IntN(3)) // equal times too
				recs = append(recs, pendingRecord{at: at, off: off, end: off + 1})
				off++
			}
			runs = append(runs, len(recs))
		}
		want := slices.Clone(recs)
		slices.SortStableFunc(want, pendingRecord.compare)
		var got []pendingRecord
		got, scratch = mergeRuns(slices.Clone(recs), scratch, slices.Clone(runs))
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: runs %v of %v: merged %v, want %v", trial, runs, recs, got, want)
		}
	}
}
