//go:build unix

package cli

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// handOver replaces this process with the exporter: it keeps the pid, so a
// service manager's signals and socket activation reach the exporter
// itself, and its exit status is the command's.
func handOver(env Env, path string, args []string) int {
	err := unix.Exec(path, append([]string{path}, args...), os.Environ())
	fmt.Fprintf(env.Stderr, "%s: serve: running %s: %v\n", programName, path, err)
	return exitFailed
}
