//go:build !linux

package cli

import "os"

// treeTimes: outside Linux, wait's rusage does not carry the descendants.
func treeTimes(*os.ProcessState) tree { return tree{} }

// openTree: outside Linux, nothing shows a process's reaped descendants.
func openTree(int) func() tree { return nil }
