package otelcol

import (
	"bufio"
	"strconv"
	"strings"
	"time"
)

// A Point is one number data point (of a gauge or a sum) as the debug
// exporter logged it, with its metric's descriptor, its scope and its
// resource.
type Point struct {
	Metric   string
	Unit     string
	DataType string // Gauge, Sum
	// Monotonic and Temporality (Cumulative, Delta) are a sum's.
	Monotonic   bool
	Temporality string
	Scope       string // the instrumentation scope's name
	Resource    map[string]string
	Attrs       map[string]string
	Value       float64
	// Start is its StartTimestamp (a cumulative sum's counts since then);
	// At, its Timestamp: when the SDK collected it.
	Start, At time.Time
}

// timeLayout is how the collector's pcommon.Timestamp prints.
const timeLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// ParsePoints reads the debug exporter's detailed output: "ResourceMetrics
// #n", "Resource attributes:" and its "-> key: Type(value)" lines,
// "InstrumentationScope name version", "Descriptor:" and its "-> Name: ...",
// "-> Unit:", "-> DataType:", "-> IsMonotonic:", "-> AggregationTemporality:"
// lines, then for each point "NumberDataPoints #n", "Data point
// attributes:" and its lines (left out when it has none), "StartTimestamp:",
// "Timestamp:" and "Value:". The collector writes while the test reads, so
// only whole lines count, and only points whose value was read: a value
// cut in the middle of its line would read as a smaller number.
func ParsePoints(out string) []Point {
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[:i+1]
	} else {
		out = ""
	}
	var points []Point
	// The current resource, scope and descriptor; the point being read,
	// until its value; what "-> key: value" lines belong to.
	desc := Point{Resource: map[string]string{}}
	var cur *Point
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if kv, ok := strings.CutPrefix(l, "-> "); ok {
			k, v, ok := strings.Cut(kv, ": ")
			if !ok {
				continue
			}
			switch section {
			case "resource", "attrs":
				if i := strings.IndexByte(v, '('); i >= 0 && strings.HasSuffix(v, ")") {
					v = v[i+1 : len(v)-1]
				}
				if section == "resource" {
					desc.Resource[k] = v
				} else if cur != nil {
					cur.Attrs[k] = v
				}
			case "descriptor":
				switch k {
				case "Name":
					desc.Metric = v
				case "Unit":
					desc.Unit = v
				case "DataType":
					desc.DataType = v
				case "IsMonotonic":
					desc.Monotonic = v == "true"
				case "AggregationTemporality":
					desc.Temporality = v
				}
			}
			continue
		}
		section = ""
		switch {
		case strings.HasPrefix(l, "ResourceMetrics #"):
			desc, cur = Point{Resource: map[string]string{}}, nil
		case l == "Resource attributes:":
			desc.Resource, section = map[string]string{}, "resource"
		case strings.HasPrefix(l, "InstrumentationScope ") || l == "InstrumentationScope":
			f := strings.Fields(l)
			desc.Scope = ""
			if len(f) > 1 {
				desc.Scope = f[1]
			}
		case l == "Descriptor:":
			desc.Metric, desc.Unit, desc.DataType, desc.Monotonic, desc.Temporality = "", "", "", false, ""
			cur, section = nil, "descriptor"
		case strings.HasPrefix(l, "NumberDataPoints #"):
			p := desc
			p.Attrs = map[string]string{}
			cur = &p
		case l == "Data point attributes:":
			section = "attrs"
		case cur != nil && strings.HasPrefix(l, "StartTimestamp: "):
			cur.Start, _ = time.Parse(timeLayout, strings.TrimPrefix(l, "StartTimestamp: "))
		case cur != nil && strings.HasPrefix(l, "Timestamp: "):
			cur.At, _ = time.Parse(timeLayout, strings.TrimPrefix(l, "Timestamp: "))
		case cur != nil && strings.HasPrefix(l, "Value: "):
			v, err := strconv.ParseFloat(strings.TrimPrefix(l, "Value: "), 64)
			if err == nil {
				cur.Value = v
				points = append(points, *cur)
			}
			cur = nil
		}
	}
	return points
}
