// Command cputime_exporter exports the CPU times of processes and threads,
// their creation and exit, as Prometheus metrics (and OTLP, on request):
// docs/serve.md. It is a binary of its own, as Prometheus exporters are, so
// that the cputime command links none of its dependencies; "cputime serve
// ARGS" runs it with ARGS.
package main

import (
	"io"
	"os"
)

// stdio is where a run of the exporter writes.
type stdio struct {
	Stdout, Stderr io.Writer
}

func main() {
	os.Exit(serve(stdio{Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:]))
}
