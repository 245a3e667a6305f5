package otelcol

import (
	"testing"
	"time"
)

// The debug exporter's detailed output, as its own tests have it
// (go.opentelemetry.io/collector/exporter/debugexporter,
// internal/otlptext/testdata/metrics), behind the log line the collector
// writes first; the last point is cut within its value's line.
const debugOutput = `2026-11-29T00:00:00.000Z	info	Metrics	{"resource metrics": 1, "metrics": 3, "data points": 4}
ResourceMetrics #0
Resource SchemaURL: 
Resource attributes:
     -> service.name: Str(svc)
ScopeMetrics #0
ScopeMetrics SchemaURL: 
InstrumentationScope example.com/scope v1
Metric #0
Descriptor:
     -> Name: work.time
     -> Description: CPU time.
     -> Unit: s
     -> DataType: Sum
     -> IsMonotonic: true
     -> AggregationTemporality: Cumulative
NumberDataPoints #0
Data point attributes:
     -> work.type: Str(parse)
StartTimestamp: 2026-11-29 00:00:00.000000321 +0000 UTC
Timestamp: 2026-11-29 00:00:01.000000789 +0000 UTC
Value: 1.250000
NumberDataPoints #1
StartTimestamp: 2026-11-29 00:00:00.000000321 +0000 UTC
Timestamp: 2026-11-29 00:00:01.000000789 +0000 UTC
Value: 0.500000
Metric #1
Descriptor:
     -> Name: work.exact
     -> Description: 
     -> Unit: 
     -> DataType: Gauge
NumberDataPoints #0
Timestamp: 2026-11-29 00:00:01.000000789 +0000 UTC
Value: 1
Metric #2
Descriptor:
     -> Name: work.ended
     -> Unit: {task}
     -> DataType: Sum
     -> IsMonotonic: false
     -> AggregationTemporality: Delta
NumberDataPoints #0
StartTimestamp: 2026-11-29 00:00:00.000000321 +0000 UTC
Timestamp: 2026-11-29 00:00:01.000000789 +0000 UTC
Value: 12`

// TestParsePointsWithoutAttributes: every point is read with its
// descriptor, scope and resource, the points without attributes too, and
// not the one whose value's line is not whole yet.
func TestParsePointsWithoutAttributes(t *testing.T) {
	ps := ParsePoints(debugOutput)
	if len(ps) != 3 {
		t.Fatalf("%d points, want 3: %+v", len(ps), ps)
	}
	at := time.Date(2026, 11, 29, 0, 0, 1, 789, time.UTC)
	for i, want := range []struct {
		metric, unit, typ, temporality, workType string
		monotonic                                bool
		value                                    float64
	}{
		{"work.time", "s", "Sum", "Cumulative", "parse", true, 1.25},
		{"work.time", "s", "Sum", "Cumulative", "", true, 0.5},
		{"work.exact", "", "Gauge", "", "", false, 1},
	} {
		p := ps[i]
		if p.Metric != want.metric || p.Unit != want.unit || p.DataType != want.typ || p.Temporality != want.temporality ||
			p.Monotonic != want.monotonic || p.Attrs["work.type"] != want.workType || p.Value != want.value {
			t.Errorf("point %d: %+v, want %+v", i, p, want)
		}
		if p.Scope != "example.com/scope" || p.Resource["service.name"] != "svc" || !p.At.Equal(at) {
			t.Errorf("point %d: scope %q, resource %v, at %v", i, p.Scope, p.Resource, p.At)
		}
	}
	if !ps[0].Start.Equal(time.Date(2026, 11, 29, 0, 0, 0, 321, time.UTC)) || !ps[2].Start.IsZero() {
		t.Errorf("start %v and %v", ps[0].Start, ps[2].Start)
	}
}
