package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cputime/cputime/cmd/cputime/internal/early"
)

// Every command but serve (and the help, which lists it) runs before the
// exporter's dependencies are initialized: GODEBUG=inittrace lists the
// packages initialized, and none of client_golang, procfs, the toolkit or
// net/http is among them for "cputime cpus"; for
// "serve --version" they are.
func TestEarlyCommandsSkipServeInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "cputime")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inits := func(args ...string) map[string]bool {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cputime %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		m := map[string]bool{}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == "init" {
				m[f[1]] = true
			}
		}
		return m
	}
	heavy := []string{"github.com/prometheus/client_golang/prometheus", "github.com/prometheus/procfs", "net/http", "github.com/prometheus/exporter-toolkit/web"}
	got := inits("cpus")
	if !got["github.com/cputime/cputime/internal/cli"] {
		t.Fatalf("cputime cpus: no init trace of the CLI package (%d inits traced)", len(got))
	}
	for _, p := range heavy {
		if got[p] {
			t.Errorf("cputime cpus initialized %s", p)
		}
	}
	got = inits("serve", "--version")
	for _, p := range heavy {
		if !got[p] {
			t.Errorf("cputime serve --version did not initialize %s: is the test looking at the right names?", p)
		}
	}
}

func TestEarlyDeferred(t *testing.T) {
	// In a test binary everything waits for the test's main.
	if !early.Deferred([]string{"cpus"}) {
		t.Error("Deferred in a test binary: false")
	}
}
