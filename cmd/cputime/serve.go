package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/cputime/cputime/internal/cli"
)

const serveHelp = `usage: cputime serve [FLAGS] [PID...]

serve exports the CPU times of processes and threads as Prometheus metrics
(default :10641/metrics). It runs cputime-serve, found beside this binary
or in PATH ("cputime serve -h" shows its flags); install it with
  go install github.com/cputime/cputime/cmd/cputime-serve@latest
`

const serveBinary = "cputime-serve"

// errNoServe says where to get cputime-serve.
var errNoServe = errors.New("serve needs " + serveBinary + ", which is neither beside this binary nor in PATH: " +
	"go install github.com/cputime/cputime/cmd/cputime-serve@latest")

// findServe looks for cputime-serve beside the running binary, then in PATH.
func findServe() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), serveBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(serveBinary); err == nil {
		return p, nil
	}
	return "", errNoServe
}

// serve replaces this process with "cputime-serve serve ARGS": the same
// pid, signals and exit status, as if this binary served.
func serve(env cli.Env, args []string) int {
	path, err := findServe()
	if err != nil && len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(env.Stdout, serveHelp)
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "cputime: %v\n", err)
		return 1
	}
	return execServe(env, path, append([]string{serveBinary, "serve"}, args...))
}

// execServe is syscall.Exec where the system has it; on Windows, which has
// no exec, it runs cputime-serve as a child with this process's standard
// files and returns its exit status.
var execServe = func(env cli.Env, path string, argv []string) int {
	if runtime.GOOS != "windows" {
		err := syscall.Exec(path, argv, os.Environ())
		fmt.Fprintf(env.Stderr, "cputime: running %s: %v\n", path, err)
		return 1
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	fmt.Fprintf(env.Stderr, "cputime: running %s: %v\n", path, err)
	return 1
}
