// Package otelgoroutines exports a goroutines.Watcher's counters as
// OpenTelemetry metrics, observed when the MeterProvider's reader collects:
//
//	reg, err := otelgoroutines.Register(w, otel.GetMeterProvider())
//
// The instruments, each a cumulative counter unless it says:
//
//	go.task.cpu.time{go.task.type}            s       CPU while a task of the type was the innermost one
//	go.task.ended{go.task.type}               {task}  tasks of the type that ended (with goroutines.Middleware: requests)
//	go.task.no_task.cpu.time                  s       CPU of goroutines outside any task
//	go.task.runtime.cpu.time                  s       CPU of the threads while no goroutine held them
//	go.task.unattributed.cpu.time{go.task.unattributed.reason} s  CPU the Watcher could not attribute, and why
//	go.task.overflow.types                    {type}  distinct task types counted as go.task.type="(overflow)"
//	go.task.lost.trace_generations            {generation}
//	go.task.lost.switch_records               {record}
//	go.task.exact                             gauge: 1 exact (context-switch records), 0 sampled clocks
//
// They mirror package promgoroutines; through OpenTelemetry's Prometheus
// exporter go.task.cpu.time becomes go_task_cpu_time_seconds_total.
package otelgoroutines

import (
	"context"

	"github.com/cputime/cputime/goroutines"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the meter Register uses.
const ScopeName = "github.com/cputime/cputime/goroutines/otelgoroutines"

// Register creates the instruments on a meter of mp and a callback that
// observes w's counters (one Snapshot per collection). Unregister the
// returned Registration to stop.
func Register(w *goroutines.Watcher, mp metric.MeterProvider) (metric.Registration, error) {
	m := mp.Meter(ScopeName)
	cpu, err := m.Float64ObservableCounter("go.task.cpu.time", metric.WithUnit("s"),
		metric.WithDescription("CPU time of goroutines while a runtime/trace task of the type was their innermost task."))
	if err != nil {
		return nil, err
	}
	ended, err := m.Int64ObservableCounter("go.task.ended", metric.WithUnit("{task}"),
		metric.WithDescription("Runtime/trace tasks of the type that ended (requests, with goroutines.Middleware)."))
	if err != nil {
		return nil, err
	}
	noTask, err := m.Float64ObservableCounter("go.task.no_task.cpu.time", metric.WithUnit("s"),
		metric.WithDescription("CPU time of goroutines outside any runtime/trace task."))
	if err != nil {
		return nil, err
	}
	rt, err := m.Float64ObservableCounter("go.task.runtime.cpu.time", metric.WithUnit("s"),
		metric.WithDescription("CPU time of the process's threads while no goroutine held them."))
	if err != nil {
		return nil, err
	}
	unattr, err := m.Float64ObservableCounter("go.task.unattributed.cpu.time", metric.WithUnit("s"),
		metric.WithDescription("CPU time of the process the watcher could not attribute, by reason."))
	if err != nil {
		return nil, err
	}
	over, err := m.Int64ObservableCounter("go.task.overflow.types", metric.WithUnit("{type}"),
		metric.WithDescription("Distinct task types past the watcher's limit, counted together as (overflow)."))
	if err != nil {
		return nil, err
	}
	lostGen, err := m.Int64ObservableCounter("go.task.lost.trace_generations", metric.WithUnit("{generation}"),
		metric.WithDescription("Execution-trace generations the watcher lost (their CPU is unattributed)."))
	if err != nil {
		return nil, err
	}
	lostRec, err := m.Int64ObservableCounter("go.task.lost.switch_records", metric.WithUnit("{record}"),
		metric.WithDescription("Context-switch records the kernel dropped."))
	if err != nil {
		return nil, err
	}
	exact, err := m.Int64ObservableGauge("go.task.exact",
		metric.WithDescription("1 when CPU comes from the kernel's context-switch records, 0 when from sampled thread CPU clocks."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.Snapshot()
		for _, t := range append(s.Types, s.Overflow) {
			if t.Type == goroutines.OverflowType && t.CPU == 0 && t.Ended == 0 && s.OverflowTypes == 0 {
				continue
			}
			typ := metric.WithAttributes(attribute.String("go.task.type", t.Type))
			o.ObserveFloat64(cpu, t.CPU.Seconds(), typ)
			o.ObserveInt64(ended, int64(t.Ended), typ)
		}
		o.ObserveFloat64(noTask, s.NoTask.Seconds())
		o.ObserveFloat64(rt, s.Runtime.Seconds())
		for reason, d := range s.Unattributed {
			o.ObserveFloat64(unattr, d.Seconds(), metric.WithAttributes(attribute.String("go.task.unattributed.reason", reason)))
		}
		o.ObserveInt64(over, int64(s.OverflowTypes))
		o.ObserveInt64(lostGen, int64(s.LostGenerations))
		o.ObserveInt64(lostRec, int64(s.LostRecords))
		e := int64(0)
		if s.Exact {
			e = 1
		}
		o.ObserveInt64(exact, e)
		return nil
	}, cpu, ended, noTask, rt, unattr, over, lostGen, lostRec, exact)
}
