//go:build !windows

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cputime/cputime/internal/cli"
)

// "cputime serve ARGS" runs "cputime-serve serve ARGS", found in PATH when
// it is not beside the binary, and says how to install it when it is
// nowhere.
func TestServeFindsCputimeServe(t *testing.T) {
	var gotPath string
	var gotArgv []string
	old := execServe
	execServe = func(env cli.Env, path string, argv []string) int { gotPath, gotArgv = path, argv; return 7 }
	defer func() { execServe = old }()

	dir := t.TempDir()
	stand := filepath.Join(dir, serveBinary)
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stderr bytes.Buffer
	env := cli.Env{Stdout: &bytes.Buffer{}, Stderr: &stderr, Source: cli.System{}}
	if status := cli.Run(env, []string{"serve", "--threads", "42"}); status != 7 {
		t.Fatalf("status %d, stderr %q", status, stderr.String())
	}
	if gotPath != stand || !slices.Equal(gotArgv, []string{serveBinary, "serve", "--threads", "42"}) {
		t.Errorf("ran %s %q", gotPath, gotArgv)
	}

	t.Setenv("PATH", t.TempDir())
	stderr.Reset()
	if status := cli.Run(env, []string{"serve"}); status != 1 || !strings.Contains(stderr.String(), "go install github.com/cputime/cputime/cmd/cputime-serve@latest") {
		t.Errorf("without cputime-serve: status %d, stderr %q", status, stderr.String())
	}
	if _, err := findServe(); !errors.Is(err, errNoServe) {
		t.Errorf("findServe: %v", err)
	}
}
