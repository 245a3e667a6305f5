package recorder

import (
	"math/rand/v2"
	"testing"
)

// levelCaps, on random caps with many ties: every share is the lesser of
// its cap and one level L; where the caps add up to more than the budget,
// the shares add up to the budget less the remainder of dividing among
// those held to L (fewer than them); otherwise every share is its cap.
func TestLevelCapsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		n := 1 + r.IntN(40)
		caps := make([]uint64, n)
		var sum uint64
		for i := range caps {
			caps[i] = uint64(r.IntN(12)) * uint64(1+r.IntN(3)) // ties and zeros
			sum += caps[i]
		}
		budget := uint64(r.IntN(int(sum) + 20))
		out := levelCaps(caps, budget)
		if len(out) != n {
			t.Fatalf("round %d: %d shares for %d caps", round, len(out), n)
		}
		var got, level uint64
		var held int
		for i, s := range out {
			if s > caps[i] {
				t.Fatalf("round %d: share %d over its cap %d (caps %v, budget %d)", round, s, caps[i], caps, budget)
			}
			if s < caps[i] {
				if held > 0 && s != level {
					t.Fatalf("round %d: shares held below their caps at %d and %d (caps %v, budget %d: %v)", round, level, s, caps, budget, out)
				}
				level = s
				held++
			}
			got += s
		}
		for i, s := range out {
			if held > 0 && s == caps[i] && caps[i] > level {
				t.Fatalf("round %d: cap %d above the level %d given whole (caps %v, budget %d: %v)", round, caps[i], level, caps, budget, out)
			}
		}
		switch {
		case sum <= budget && held > 0:
			t.Fatalf("round %d: caps add up to %d within the budget %d, yet %d held below them: %v", round, sum, budget, held, out)
		case sum > budget && (got > budget || budget-got >= uint64(max(held, 1))):
			t.Fatalf("round %d: shares add up to %d for a budget of %d with %d held to the level (caps %v: %v)", round, got, budget, held, caps, out)
		}
	}
}
