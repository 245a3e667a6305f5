// Command cputime reports when threads and processes were created and
// exited, and the CPU time they used in kernel and user mode: see the
// repository's README, or "cputime -h". "cputime serve" runs the exporter,
// cputime_exporter, a command of its own (docs/serve.md).
package main

import (
	"os"

	"github.com/cputime/cputime/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}
