// Package suggest finds the word a user probably meant: the commands and
// options of cputime (package cli, and top's own flags) answer a slip of
// the fingers with "did you mean …".
package suggest

import (
	"fmt"
	"strings"
)

// DidYouMean is ` (did you mean "X"?)` for the candidate closest to word,
// or "" when none is close enough to be a slip of the fingers: an edit
// distance of at most a third of the word (one edit for short words).
func DidYouMean(word string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(strings.TrimLeft(word, "-"))/3) {
		// A prefix of one candidate only ("comp", "--dur") is clear too.
		var pre []string
		for _, c := range candidates {
			if len(strings.TrimLeft(word, "-")) >= 2 && strings.HasPrefix(c, word) {
				pre = append(pre, c)
			}
		}
		if len(pre) != 1 {
			return ""
		}
		best = pre[0]
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) between a and b, in bytes: an insertion, a deletion, a
// substitution or a swap of neighbours is one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
