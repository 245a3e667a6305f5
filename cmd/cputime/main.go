// Command cputime shows the creation time and the kernel and user CPU time
// of processes and their threads, as Win32's GetProcessTimes and
// GetThreadTimes report them, and with "cputime serve" exports them as
// Prometheus metrics. Run "cputime -h" for usage.
package main

import (
	"os"

	"github.com/cputime/cputime/internal/cli"
)

func main() {
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}
