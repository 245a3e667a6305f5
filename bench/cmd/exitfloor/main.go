//go:build linux

// Command exitfloor runs a command while a taskstats listener is
// registered for every CPU's exit records, and reads none of them until
// the command has exited: what the kernel's exit record alone costs the
// work it describes, with no reader running beside it. BenchmarkRun runs
// it as a variant (floor-x), beside cputime run, whose exact final times
// need those records, and perf stat.
//
//	exitfloor -- CMD [ARG...]
//
// It needs what the records need (root, or CAP_NET_ADMIN, in the initial
// namespaces). It exits with CMD's status, and prints to stderr how many
// records came and how many the kernel dropped.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/cputime/cputime/internal/taskstats"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: exitfloor -- CMD [ARG...]")
		os.Exit(2)
	}
	// Unpolled: a socket in the runtime's poller would wake a thread of
	// this process at every exit, which is a reader's cost, not the
	// record's. 256 MiB holds the records of a long run unread.
	l, err := taskstats.Listen(taskstats.Options{Unpolled: true, ReceiveBuffer: 256 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, "exitfloor:", err)
		os.Exit(2)
	}
	defer l.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var records, dropped uint64
	if derr := l.Drain(func(b taskstats.Batch) {
		records += uint64(len(b.Records))
		dropped += b.Dropped
	}); derr != nil {
		fmt.Fprintln(os.Stderr, "exitfloor:", derr)
	}
	fmt.Fprintf(os.Stderr, "exitfloor: %d exit records, %d dropped\n", records, dropped)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "exitfloor:", err)
		os.Exit(127)
	}
}
