// Package otelgoroutines exports a goroutines.Watcher's counters as
// OpenTelemetry metrics, observed when the MeterProvider's reader collects:
//
//	w, reg, err := otelgoroutines.Watch(otel.GetMeterProvider())
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
//
// # Start time
//
// The counters count from the Watcher's start (Snapshot.Start). A
// cumulative point's start time (OTLP's StartTimeUnixNano) should say so,
// but the OpenTelemetry metric API has no way to state it: the Go SDK
// stamps it itself, when it first makes an instrument on a provider (a
// later making of the same instrument there, by a second Watch or
// Register, shares the first one's). Watch therefore makes the
// instruments, then starts the Watcher: the start time precedes the first
// counted instant by the Watcher's own start-up, and nothing is counted in
// between, so every point's value is its CPU since its start time.
//
// Register, given a Watcher that is already running, makes the
// instruments when it is called: their start time is Register's, and the
// first point holds the CPU since the Watcher's start too, earlier than
// its start time by the time between the two calls. That is the lesser
// error of the two the API leaves: values counted from Register instead
// (less a snapshot taken then) would still hold up to a period of CPU from
// before it (Snapshot.Through lags), and would part from the Watcher's own
// Snapshot and from promgoroutines. Call Register right after
// goroutines.Watch, or use Watch. A global MeterProvider that delegates
// (otel.GetMeterProvider before otel.SetMeterProvider) makes the
// instruments when the SDK's provider is set: the start time is then that
// moment's, with either function. A Watcher that replaces another is best
// exported on a MeterProvider of its own, so that its points start anew.
package otelgoroutines

import (
	"context"
	"errors"

	"github.com/cputime/cputime/goroutines"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the meter Register uses.
const ScopeName = "github.com/cputime/cputime/goroutines/otelgoroutines"

// Watch makes the instruments on a meter of mp, then starts a Watcher
// with opts and registers a callback that observes its counters (one
// Snapshot per collection): the points' start time (stamped by the SDK
// when it makes an instrument) is then the Watcher's start, a little
// before it (see Start time). Close the Watcher and unregister the
// Registration to stop.
func Watch(mp metric.MeterProvider, opts ...goroutines.Option) (*goroutines.Watcher, metric.Registration, error) {
	m := mp.Meter(ScopeName)
	in, err := newInstruments(m)
	if err != nil {
		return nil, nil, err
	}
	w, err := goroutines.Watch(opts...)
	if err != nil {
		return nil, nil, err
	}
	reg, err := in.register(m, w)
	if err != nil {
		return nil, nil, errors.Join(err, w.Close())
	}
	return w, reg, nil
}

// Register creates the instruments on a meter of mp and a callback that
// observes w's counters (one Snapshot per collection). Unregister the
// returned Registration to stop. The points' start time is when Register
// made the instruments, later than w's start (see Start time): call it
// right after goroutines.Watch, or use Watch.
func Register(w *goroutines.Watcher, mp metric.MeterProvider) (metric.Registration, error) {
	m := mp.Meter(ScopeName)
	in, err := newInstruments(m)
	if err != nil {
		return nil, err
	}
	return in.register(m, w)
}

// instruments are the adapter's instruments on one meter.
type instruments struct {
	cpu, noTask, rt, unattr metric.Float64ObservableCounter
	ended, over             metric.Int64ObservableCounter
	lostGen, lostRec        metric.Int64ObservableCounter
	exact                   metric.Int64ObservableGauge
}

func newInstruments(m metric.Meter) (*instruments, error) {
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
	return &instruments{cpu: cpu, noTask: noTask, rt: rt, unattr: unattr, ended: ended, over: over,
		lostGen: lostGen, lostRec: lostRec, exact: exact}, nil
}

// register observes w's counters on the instruments, one Snapshot per
// collection.
func (in *instruments) register(m metric.Meter, w *goroutines.Watcher) (metric.Registration, error) {
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.Snapshot()
		for _, t := range append(s.Types, s.Overflow) {
			if t.Type == goroutines.OverflowType && t.CPU == 0 && t.Ended == 0 && s.OverflowTypes == 0 {
				continue
			}
			typ := metric.WithAttributes(attribute.String("go.task.type", t.Type))
			o.ObserveFloat64(in.cpu, t.CPU.Seconds(), typ)
			o.ObserveInt64(in.ended, int64(t.Ended), typ)
		}
		o.ObserveFloat64(in.noTask, s.NoTask.Seconds())
		o.ObserveFloat64(in.rt, s.Runtime.Seconds())
		for reason, d := range s.Unattributed {
			o.ObserveFloat64(in.unattr, d.Seconds(), metric.WithAttributes(attribute.String("go.task.unattributed.reason", reason)))
		}
		o.ObserveInt64(in.over, int64(s.OverflowTypes))
		o.ObserveInt64(in.lostGen, int64(s.LostGenerations))
		o.ObserveInt64(in.lostRec, int64(s.LostRecords))
		e := int64(0)
		if s.Exact {
			e = 1
		}
		o.ObserveInt64(in.exact, e)
		return nil
	}, in.cpu, in.ended, in.noTask, in.rt, in.unattr, in.over, in.lostGen, in.lostRec, in.exact)
}
