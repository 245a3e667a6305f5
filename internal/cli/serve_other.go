//go:build !unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// handOver runs the exporter as a child with this process's standard
// streams and returns its exit status. A console's Ctrl-C reaches both
// processes; this one waits for the exporter to end on it.
func handOver(env Env, path string, args []string) int {
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Stdout, env.Stderr
	signal.Ignore(os.Interrupt)
	defer signal.Reset(os.Interrupt)
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: serve: running %s: %v\n", programName, path, err)
		return exitFailed
	}
	return exitOK
}
