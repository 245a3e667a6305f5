package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of cputime_collect_errors_total.
const (
	reasonRefresh = "refresh" // the tasks could not be read: the series are those of the last refresh
	reasonMetric  = "metric"  // a series could not be made from its values and labels
	reasonWalk    = "walk"    // a cgroup directory could not be listed: its descendants are left out
)

var descCollectErrors = prometheus.NewDesc("cputime_collect_errors_total",
	"Errors inside scrapes, by reason: refresh (the tasks could not be read; the scrape exports the last values read), metric (one series could not be made and is left out), walk (a cgroup directory could not be listed; its descendants are left out). Each error is also reported to the scraper's registry, and the rest of the scrape goes on.",
	[]string{"reason"}, nil)

// collectErrors counts the errors met inside scrapes, by reason. Its
// owner's mutex guards it.
type collectErrors map[string]uint64

// add counts err under reason and sends it as an invalid metric of desc,
// which the registry reports (promhttp logs it) without ending the
// collection.
func (e collectErrors) add(ch chan<- prometheus.Metric, desc *prometheus.Desc, reason string, err error) {
	e[reason]++
	ch <- prometheus.NewInvalidMetric(desc, err)
}

// send sends a series of desc, or counts why it could not be made.
func (e collectErrors) send(ch chan<- prometheus.Metric, desc *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(desc, vt, v, labels...)
	if err != nil {
		e.add(ch, desc, reasonMetric, err)
		return
	}
	ch <- m
}

// export sends the counts of reasons, each present from the start so
// that rate() sees the first error.
func (e collectErrors) export(ch chan<- prometheus.Metric, reasons ...string) {
	for _, r := range reasons {
		e.send(ch, descCollectErrors, prometheus.CounterValue, float64(e[r]), r)
	}
}
