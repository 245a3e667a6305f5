// Command cputime reports when threads and processes were created and
// exited, and the CPU time they used in kernel and user mode: see the
// repository's README, or "cputime -h".
//
// This binary links no Prometheus client, whose package initialisation
// made every command start later: a listing took 6.3 ms with it and 4.5 ms
// without (bench/cli_vs_ps.py). "cputime serve" runs cputime-serve
// (module github.com/cputime/cputime/cmd/cputime-serve), which has every
// command of this one and the exporter.
package main

import (
	"os"

	"github.com/cputime/cputime/internal/cli"
)

func init() { cli.Register("serve", serve, serveHelp) }

func main() {
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}
