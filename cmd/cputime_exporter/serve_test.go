//go:build !windows

package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/cliflag"
)

func TestParseServe(t *testing.T) {
	so, err := parseServe([]string{"--threads", "12", "--threads.max=5", "34", "--name", "^a", "--sample-interval", "0", "--web.listen-address", "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(so.opts.PIDs, []int{12, 34}) || !so.opts.Threads || so.opts.MaxThreads != 5 ||
		so.opts.Name.String() != "^a" || so.opts.SampleInterval >= 0 || !slices.Equal(so.addrs, []string{"127.0.0.1:1"}) || so.path != "/metrics" {
		t.Errorf("parsed %+v", so)
	}
	so, err = parseServe(nil)
	if err != nil || !slices.Equal(so.addrs, []string{defaultAddress}) || so.opts.SampleInterval != 0 || len(so.opts.PIDs) != 0 ||
		so.opts.ExitedKeep != 2*time.Minute || so.maxConns != 64 {
		t.Errorf("defaults: %+v, %v", so, err)
	}
	if _, err := parseServe([]string{"-h"}); !errors.Is(err, cliflag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	for _, bad := range [][]string{{"0"}, {"x"}, {"--name", "("}, {"--threads.max", "0"}, {"--sample-interval", "-1s"}, {"--web.telemetry-path", "/"}, {"--bogus"},
		{"--exited.keep", "0s"}, {"--exited.max", "0"}, {"--web.max-connections", "1"},
		{"--cgroup.aggregate", "--threads"}, {"--cgroup.aggregate", "12"}, {"--otlp.protocol", "udp"}, {"--otlp.interval", "-1s"},
		{"--web.config.file", "--threads"}} {
		if _, err := parseServe(bad); err == nil || errors.Is(err, cliflag.ErrHelp) {
			t.Errorf("%q: got %v, want an error", strings.Join(bad, " "), err)
		}
	}
}

func TestParseServeRepeats(t *testing.T) {
	so, err := parseServe([]string{"--web.listen-address", "127.0.0.1:1", "--web.listen-address=[::1]:2", "--sample-interval", "250ms", "--exited.keep", "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(so.addrs, []string{"127.0.0.1:1", "[::1]:2"}) || so.opts.SampleInterval != 250*time.Millisecond || so.opts.ExitedKeep != 30*time.Second {
		t.Errorf("parsed %+v", so)
	}
}
