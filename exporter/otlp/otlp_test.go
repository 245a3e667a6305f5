package otlp

import (
	"context"
	"strings"
	"testing"

	"github.com/cputime/cputime/exporter"
)

// Bad endpoints and protocols are refused with a sentence that names them.
func TestNewRejects(t *testing.T) {
	c, err := exporter.New(exporter.Options{PIDs: []int{1}, SampleInterval: -1, NoExitRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, o := range []Options{
		{Endpoint: "127.0.0.1:4318"},
		{Endpoint: "ftp://127.0.0.1:4318"},
		{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc+json"},
		{Endpoint: "://x", Protocol: "grpc"},
	} {
		p, err := New(context.Background(), c, o)
		if err == nil {
			p.Shutdown(context.Background())
			t.Errorf("%+v: no error", o)
			continue
		}
		if !strings.HasPrefix(err.Error(), "otlp: ") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
