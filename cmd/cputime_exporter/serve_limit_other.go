//go:build !unix

package main

// raiseFileLimit: Windows has no per-process limit on handles that the
// sampler would need (it keeps none open).
func raiseFileLimit() int { return 1 << 20 }
