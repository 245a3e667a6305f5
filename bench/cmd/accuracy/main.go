// Command accuracy prints, as Markdown tables, how precise and how accurate
// each library's answers are on this machine:
//
//   - precision: for a busy thread and a busy process, the smallest and the
//     median nonzero increment between successive reads (sampled for a while);
//   - accuracy: for 20 children, the error of each library's creation time
//     against the instant recorded just before the fork.
//
// Run it with `go run ./cmd/accuracy` in the bench module. Linux only.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/cputime/cputime/bench/internal/child"
)

func main() {
	child.Main() // this binary doubles as the measured child
	window := flag.Duration("window", 0, "how long to sample each reader (default 300ms)")
	children := flag.Int("children", 20, "children to start for the creation-time table")
	flag.Parse()
	if runtime.GOOS != "linux" {
		fmt.Fprintln(os.Stderr, "accuracy: Linux only")
		os.Exit(1)
	}
	if err := run(*window, *children); err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
}
