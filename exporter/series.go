package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// labels holds the label pairs of one task's series, made when the task is
// first exported and reused by every later scrape, instead of being built
// and checked afresh for each series (prometheus.MustNewConstMetric);
// BenchmarkScrape gives the cost of a scrape. The pairs are never changed
// once made: a scrape still encoding reads them while the next one is
// collected.
type labels struct {
	system, user, plain []*dto.LabelPair // sorted by name, as the registry wants them
}

func pair(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }

// newLabels makes the pairs of a task: a thread when tid is not empty.
// Label names sort as mode < name < pid < start < tid.
func newLabels(pid, tid, name, start string) *labels {
	p, nm, st := pair("pid", pid), pair("name", name), pair("start", start)
	base := []*dto.LabelPair{nm, p, st}
	if tid != "" {
		base = append(base, pair("tid", tid))
	}
	withMode := func(mode string) []*dto.LabelPair {
		return append([]*dto.LabelPair{pair("mode", mode)}, base...)
	}
	return &labels{system: withMode("system"), user: withMode("user"), plain: base}
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
