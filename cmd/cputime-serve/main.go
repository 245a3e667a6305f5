// Command cputime-serve is cputime with its Prometheus exporter: every
// command of cputime, and "serve", which "cputime serve" runs. It is a
// module of its own so that cputime itself links no Prometheus client.
// Run "cputime-serve serve -h" for the exporter's flags.
package main

import (
	"os"

	"github.com/cputime/cputime/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}
