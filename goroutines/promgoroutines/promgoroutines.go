// Package promgoroutines exports a goroutines.Watcher's counters as
// Prometheus metrics:
//
//	reg.MustRegister(promgoroutines.NewCollector(w))
//
// The families, each a counter since the Watcher began unless it says:
//
//	go_task_cpu_seconds_total{task_type}          CPU while a task of the type was the innermost one
//	go_task_ended_total{task_type}                tasks of the type that ended (with goroutines.Middleware: requests)
//	go_task_no_task_cpu_seconds_total             CPU of goroutines outside any task
//	go_task_runtime_cpu_seconds_total             CPU of the threads while no goroutine held them
//	go_task_unattributed_cpu_seconds_total{reason} CPU the Watcher could not attribute, and why
//	go_task_overflow_types_total                  distinct task types counted as task_type="(overflow)"
//	go_task_lost_trace_generations_total          trace generations the Watcher lost
//	go_task_lost_switch_records_total             context-switch records the kernel dropped
//	go_task_exact                                 gauge: 1 exact (context-switch records), 0 sampled clocks
//
// Together the CPU families add up to the process's CPU time since the
// Watcher began (process_cpu_seconds_total, less what came before), up to
// about one period (goroutines.WithPeriod) ago. CPU per request of a route:
//
//	rate(go_task_cpu_seconds_total[5m]) / rate(go_task_ended_total[5m])
package promgoroutines

import (
	"github.com/cputime/cputime/goroutines"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	cpuDesc      = prometheus.NewDesc("go_task_cpu_seconds_total", "CPU time of goroutines while a runtime/trace task of the type was their innermost task.", []string{"task_type"}, nil)
	endedDesc    = prometheus.NewDesc("go_task_ended_total", "Runtime/trace tasks of the type that ended (requests, with goroutines.Middleware).", []string{"task_type"}, nil)
	noTaskDesc   = prometheus.NewDesc("go_task_no_task_cpu_seconds_total", "CPU time of goroutines outside any runtime/trace task.", nil, nil)
	runtimeDesc  = prometheus.NewDesc("go_task_runtime_cpu_seconds_total", "CPU time of the process's threads while no goroutine held them (scheduler, GC background work).", nil, nil)
	unattrDesc   = prometheus.NewDesc("go_task_unattributed_cpu_seconds_total", "CPU time of the process the watcher could not attribute, by reason.", []string{"reason"}, nil)
	overTypes    = prometheus.NewDesc("go_task_overflow_types_total", "Distinct task types past the watcher's limit, counted together as task_type=\"(overflow)\".", nil, nil)
	lostGens     = prometheus.NewDesc("go_task_lost_trace_generations_total", "Execution-trace generations the watcher lost (their CPU is unattributed).", nil, nil)
	lostRecs     = prometheus.NewDesc("go_task_lost_switch_records_total", "Context-switch records the kernel dropped.", nil, nil)
	exactDesc    = prometheus.NewDesc("go_task_exact", "1 when CPU comes from the kernel's context-switch records, 0 when from sampled thread CPU clocks.", nil, nil)
	collectorAll = []*prometheus.Desc{cpuDesc, endedDesc, noTaskDesc, runtimeDesc, unattrDesc, overTypes, lostGens, lostRecs, exactDesc}
)

type collector struct{ w *goroutines.Watcher }

// NewCollector returns a collector of w's counters. Each scrape takes one
// Snapshot.
func NewCollector(w *goroutines.Watcher) prometheus.Collector { return collector{w} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range collectorAll {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.w.Snapshot()
	for _, t := range append(s.Types, s.Overflow) {
		if t.Type == goroutines.OverflowType && t.CPU == 0 && t.Ended == 0 && s.OverflowTypes == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, t.CPU.Seconds(), t.Type)
		ch <- prometheus.MustNewConstMetric(endedDesc, prometheus.CounterValue, float64(t.Ended), t.Type)
	}
	ch <- prometheus.MustNewConstMetric(noTaskDesc, prometheus.CounterValue, s.NoTask.Seconds())
	ch <- prometheus.MustNewConstMetric(runtimeDesc, prometheus.CounterValue, s.Runtime.Seconds())
	for reason, d := range s.Unattributed {
		ch <- prometheus.MustNewConstMetric(unattrDesc, prometheus.CounterValue, d.Seconds(), reason)
	}
	ch <- prometheus.MustNewConstMetric(overTypes, prometheus.CounterValue, float64(s.OverflowTypes))
	ch <- prometheus.MustNewConstMetric(lostGens, prometheus.CounterValue, float64(s.LostGenerations))
	ch <- prometheus.MustNewConstMetric(lostRecs, prometheus.CounterValue, float64(s.LostRecords))
	exact := 0.0
	if s.Exact {
		exact = 1
	}
	ch <- prometheus.MustNewConstMetric(exactDesc, prometheus.GaugeValue, exact)
}
