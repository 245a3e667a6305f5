package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// build builds the main packages dirs (relative to cmd/) into dir.
func build(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the commands with:", err)
	}
	for _, p := range pkgs {
		cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), p)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", p, err, out)
		}
	}
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// The command links nothing of the exporter's: no Prometheus client, no
// HTTP server, no OpenTelemetry, no TLS.
func TestCommandLinksNoExporter(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages with:", err)
	}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (GOOS=%s): %v", goos, err)
		}
		deps := strings.Fields(string(out))
		bad := regexp.MustCompile(`^(github\.com/prometheus/|go\.opentelemetry\.io/|google\.golang\.org/|net/http$|crypto/tls$|github\.com/cputime/cputime/exporter)`)
		for _, d := range deps {
			if bad.MatchString(d) {
				t.Errorf("cputime (GOOS=%s) links %s, a dependency of the exporter's", goos, d)
			}
		}
	}
}

// cputime serve hands over to the exporter installed beside it, with the
// same arguments.
func TestServeHandsOverToExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds both commands")
	}
	dir := t.TempDir()
	build(t, dir, "./cputime", "./cputime_exporter")
	cmd := exec.Command(filepath.Join(dir, exe("cputime")), "serve", "--help")
	cmd.Env = append(os.Environ(), "PATH=") // beside it, not on PATH
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cputime serve --help: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "usage: cputime_exporter ") {
		t.Errorf("cputime serve --help printed %q, want the exporter's usage", firstLine(out))
	}
	// help serve shows the exporter's help, and completion knows its flags.
	cmd = exec.Command(filepath.Join(dir, exe("cputime")), "help", "serve")
	help, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(help), "usage: cputime_exporter ") {
		t.Errorf("cputime help serve: %v: %q, want the exporter's usage", err, firstLine(help))
	}
	flags := regexp.MustCompile(`(?m)^\s+(--[a-z.-]+)`).FindAllStringSubmatch(string(out), -1)
	comp, err := exec.Command(filepath.Join(dir, exe("cputime")), "completion", "bash").Output()
	if err != nil {
		t.Fatalf("cputime completion bash: %v", err)
	}
	for _, f := range flags {
		if !strings.Contains(string(comp), f[1]) {
			t.Errorf("the exporter takes %s, which bash completion does not offer", f[1])
		}
	}
	if len(flags) < 10 {
		t.Errorf("found %d flags in the exporter's help, want its options", len(flags))
	}
}

// Without the exporter, cputime serve says how to install it and exits
// 127, as a shell does for a command it cannot find.
func TestServeWithoutExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the command")
	}
	dir := t.TempDir()
	build(t, dir, "./cputime")
	cmd := exec.Command(filepath.Join(dir, exe("cputime")), "serve")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "PATH=") }), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 127 {
		t.Fatalf("cputime serve without the exporter: %v, want exit status 127\n%s", err, out)
	}
	if !strings.Contains(string(out), "go install github.com/cputime/cputime/cmd/cputime_exporter@") {
		t.Errorf("cputime serve without the exporter printed %q, want how to install it", out)
	}
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(string(b), "\n")
	return l
}
