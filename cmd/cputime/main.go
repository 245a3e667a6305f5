// Command cputime reports when threads and processes were created and
// exited, and the CPU time they used in kernel and user mode: see the
// repository's README, or "cputime -h". "cputime serve" is its Prometheus
// exporter (serve.go; docs/serve.md).
package main

import (
	"os"

	// Every command but serve runs from here, before the exporter's
	// dependencies are initialized (see the package doc).
	_ "github.com/cputime/cputime/cmd/cputime/internal/early"

	"github.com/cputime/cputime/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}
