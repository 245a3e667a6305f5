package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cputime/cputime/internal/buildinfo"
)

// exporterName is the exporter's binary, a command of its own (as Prometheus
// exporters are) so that this one links none of its dependencies: client
// libraries, TLS, the OpenTelemetry SDK.
const exporterName = "cputime_exporter"

// serveFlags are the exporter's options, for completion; TestServeFlags
// holds them to the exporter's help.
var serveFlags = []string{
	"--web.listen-address=", "--web.config.file=file", "--web.systemd-socket",
	"--web.telemetry-path=", "--web.max-connections=", "--threads", "--threads.max=",
	"--name=", "--cgroup", "--cgroup.aggregate", "--exited.keep=", "--exited.max=",
	"--sample-interval=", "--otlp.endpoint=", "--otlp.protocol=", "--otlp.interval=",
	"--version", "-h", "--help",
}

// findExporter returns the exporter's path: the one beside this binary
// first (the two are installed together), else the one on PATH.
func findExporter() (string, error) {
	name := exporterName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// exporterMissing says how to install the exporter.
func exporterMissing() string {
	v := buildinfo.Read().Version
	if !strings.HasPrefix(v, "v") {
		v = "latest"
	}
	return fmt.Sprintf(`the exporter, %s, is a command of its own, and none was
found beside this binary or on PATH. Install it with
    go install github.com/cputime/cputime/cmd/%s@%s
or every command at once with
    go install github.com/cputime/cputime/cmd/...@%s
`, exporterName, exporterName, v, v)
}

// serveCommand hands over to the exporter with the same arguments; when it
// is not installed, it says how to install it and exits 127, as run does
// for a command it cannot find.
func serveCommand(env Env, args []string) int {
	path, err := findExporter()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: serve: %s", programName, exporterMissing())
		return exitNotFound
	}
	return handOver(env, path, args)
}

// serveHelp is the exporter's own help, or how to install it.
func serveHelp() string {
	path, err := findExporter()
	if err != nil {
		return "usage: cputime serve [OPTION]... [PID]...\n\nserve runs the Prometheus exporter.\n\n" + exporterMissing()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || out.Len() == 0 {
			return fmt.Sprintf("usage: cputime serve [OPTION]... [PID]...\n\n%s --help: %v\n", path, err)
		}
	}
	return out.String()
}
