// Package early runs every cputime command but serve before most of the
// exporter's dependencies are initialized.
//
// The serve subcommand links net/http, crypto/tls, client_golang, the
// exporter-toolkit, protobuf and the OpenTelemetry SDK, whose package
// initialization made every command of the one binary start later, each of
// them several times the CLI's own inits (docs/serve.md and docs/figures.md
// have the figures). Go initializes packages in a fixed order (the Go spec,
// "Package initialization", Go 1.21 and later): repeatedly, the first
// package by import path whose imports are all initialized. This package
// imports only the CLI, and its path sorts before the packages serve adds
// that wait for the same standard packages (github.com/prometheus/...,
// google.golang.org/..., go.opentelemetry.io, golang.org/x/net, net/http,
// crypto/tls): so its init runs once the CLI's own dependencies are ready,
// and for any command but serve (and the help, which lists serve) it runs
// the command and exits there. What is initialized before that (packages
// ready earlier: protobuf's descriptors, yaml, runtime/metrics) still costs
// something, and so does the larger binary (dynamically linked where cgo is
// on, for net's resolver), more on a VM whose page faults are slow, as some
// 100 of serve's lighter packages initialize first (the CLI waits for
// golang.org/x/sys/unix, whose path sorts after go.opentelemetry.io:
// docs/commands.md). The main package's test checks, with
// GODEBUG=inittrace, that client_golang, procfs, the toolkit and net/http
// are not initialized for "cputime cpus".
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
