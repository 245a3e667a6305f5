package main

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseServe(t *testing.T) {
	so, err := parseServe([]string{"--threads", "12", "--threads.max=5", "34", "--name", "^a", "--sample-interval", "0", "--web.listen-address", "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(so.opts.PIDs, []int{12, 34}) || !so.opts.Threads || so.opts.MaxThreads != 5 ||
		so.opts.Name.String() != "^a" || so.opts.SampleInterval >= 0 || so.addr != "127.0.0.1:1" || so.path != "/metrics" {
		t.Errorf("parsed %+v", so)
	}
	so, err = parseServe(nil)
	if err != nil || so.addr != defaultAddress || so.opts.SampleInterval != 100*time.Millisecond || len(so.opts.PIDs) != 0 {
		t.Errorf("defaults: %+v, %v", so, err)
	}
	if _, err := parseServe([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	for _, bad := range [][]string{{"0"}, {"x"}, {"--name", "("}, {"--threads.max", "0"}, {"--sample-interval", "-1s"}, {"--web.telemetry-path", "/"}, {"--bogus"}} {
		if _, err := parseServe(bad); err == nil || errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: got %v, want an error", strings.Join(bad, " "), err)
		}
	}
}
