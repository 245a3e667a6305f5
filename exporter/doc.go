// Package exporter is a Prometheus collector (prometheus.Collector of
// github.com/prometheus/client_golang) of exact per-process and per-thread
// CPU times, built on the sampler package. It is a module of its own
// (github.com/cputime/cputime/exporter), so that the cputime library module
// never depends on a Prometheus client; "cputime serve" serves it over
// HTTP.
//
// # Metrics
//
// Every value is exact: nanoseconds from the kernel's accounting divided by
// 1e9, as float seconds.
//
//	cputime_process_cpu_seconds_total{pid,name,mode}    counter; mode "user" or "system"
//	cputime_process_start_time_seconds{pid,name}        gauge; creation time, Unix seconds
//	cputime_process_threads{pid,name}                   gauge
//	cputime_process_exit_time_seconds{pid,name}         gauge; exited processes, one scrape
//	cputime_thread_cpu_seconds_total{pid,tid,name,mode} counter; with Options.Threads
//	cputime_thread_start_time_seconds{pid,tid,name}     gauge; with Options.Threads
//	cputime_thread_series_dropped_total                 counter; threads left out by the cap
//	cputime_unseen_tasks_total                          counter; when every process is watched
//	cputime_read_errors_total                           counter
//	cputime_scrape_duration_seconds                     gauge
//
// The CPU counters are the sampler's: the exact run time (the process CPU
// clock, exited threads included; a thread's schedstat) split between user
// and system mode by the kernel's tick samples, and neither part ever goes
// back while the task lives. Creation times come from the task's start
// time in CLOCK_BOOTTIME ticks plus CLOCK_REALTIME − CLOCK_BOOTTIME, never
// from /proc/stat's btime (whole seconds, stale after a clock step).
//
// # Short-lived processes
//
// Between scrapes the collector refreshes the processes every
// Options.SampleInterval (100 ms by default, about one read per process).
// A process that exited since the previous scrape is exported by the next
// one with its final CPU times (exact where it was read as a zombie, before
// its parent reaped it; else as last read, at most one interval old) and
// cputime_process_exit_time_seconds, then its series end. A process that
// came and went within one interval is never seen; the kernel counts every
// task it creates (/proc/stat processes), and the difference from the
// tasks seen appear is cputime_unseen_tasks_total.
//
// # Threads
//
// With Options.Threads each scrape also exports every thread's times, at
// most Options.MaxThreads of them (DefaultMaxThreads, 1000): those that
// used the most CPU since the previous scrape. Threads are read at scrapes
// only; a thread that exits has no final series (its time stays in its
// process's counter).
//
// Names (comm on Linux, at most 15 bytes, set freely by the process) are
// exported as valid UTF-8 with control characters and bidirectional
// overrides replaced by '?' (LabelValue).
package exporter
