// Package early runs every cputime command but serve before the
// exporter's dependencies are initialized, so that they start as fast as
// a binary without them.
//
// The serve subcommand links net/http, crypto/tls, client_golang, the
// exporter-toolkit and protobuf, whose package initialization (and, with
// cgo, the dynamic loader) made every command of the one binary start
// later: "cputime cpus" took twice the CPU time (docs/serve.md has the
// figures). Go initializes packages in a fixed order (the Go spec,
// "Package initialization", Go 1.21 and later): repeatedly, the first
// package by import path whose imports are all initialized. This package
// imports only the CLI, and its path sorts before every package that serve
// adds (github.com/prometheus/..., google.golang.org/..., golang.org/x/net,
// net/http, and crypto/tls, which waits for net): so its init runs once
// the CLI's own dependencies are ready, and for any command but serve (and
// the help, which lists serve) it runs the command and exits there. The
// main package's test checks, with GODEBUG=inittrace, that no Prometheus
// package is initialized for "cputime cpus".
package early

import (
	"os"

	"github.com/cputime/cputime/internal/cli"
)

func init() {
	if Deferred(os.Args[1:]) {
		return
	}
	os.Exit(cli.Run(cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Source: cli.System{}}, os.Args[1:]))
}

// Deferred reports whether the command args must wait for main: serve,
// and the help (which lists serve); a test binary, which has its own main.
func Deferred(args []string) bool {
	if testing() {
		return true
	}
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "serve", "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// testing reports whether this is a test binary (go test), whose flags are
// not cputime's.
func testing() bool {
	for _, a := range os.Args[1:] {
		if len(a) > 6 && a[:6] == "-test." {
			return true
		}
	}
	return len(os.Args) > 0 && len(os.Args[0]) > 5 && os.Args[0][len(os.Args[0])-5:] == ".test"
}
