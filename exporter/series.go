package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// threadSeries holds the label pairs of one thread's three series, made
// when the thread (its pid, tid and name) is first exported and reused by
// every later scrape, instead of being built and checked afresh for each
// series (prometheus.MustNewConstMetric); BenchmarkScrape gives the cost
// of a scrape. The pairs are never changed once made: a scrape still
// encoding reads them while the next one is collected.
type threadSeries struct {
	system, user, start []*dto.LabelPair // sorted by name, as the registry wants them
	scrape              uint64           // the last scrape that exported the thread
}

// threadKey is what a thread's labels are made of.
type threadKey struct {
	pid, tid int
	name     string
}

func newThreadSeries(pid, tid, name string) *threadSeries {
	pair := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }
	p, t, nm := pair("pid", pid), pair("tid", tid), pair("name", name)
	return &threadSeries{
		system: []*dto.LabelPair{pair("mode", "system"), nm, p, t},
		user:   []*dto.LabelPair{pair("mode", "user"), nm, p, t},
		start:  []*dto.LabelPair{nm, p, t},
	}
}

// constMetric is one series' value in one scrape, with label pairs made
// beforehand: what prometheus.MustNewConstMetric makes, without the
// labels' validation and allocation each time. The label values come from
// LabelValue (valid UTF-8) and strconv; their names are the descs' own.
type constMetric struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	value   float64
	counter dto.Counter
	gauge   dto.Gauge
}

func (m *constMetric) Desc() *prometheus.Desc { return m.desc }

func (m *constMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.counter.Value != nil {
		out.Counter = &m.counter
	} else {
		out.Gauge = &m.gauge
	}
	return nil
}

// set makes m the series of desc with labels and value v, a counter or a
// gauge.
func (m *constMetric) set(desc *prometheus.Desc, labels []*dto.LabelPair, v float64, counter bool) {
	m.desc, m.labels, m.value = desc, labels, v
	if counter {
		m.counter.Value = &m.value
	} else {
		m.gauge.Value = &m.value
	}
}
