// Package exporter is a Prometheus collector (prometheus.Collector of
// github.com/prometheus/client_golang) of exact per-process and per-thread
// CPU times, built on the sampler package; "cputime serve" serves it over
// HTTP (docs/serve.md). It lives in the cputime module; the library
// package itself never imports it or client_golang.
//
// # Metrics
//
// Every value is exact: nanoseconds from the kernel's accounting divided by
// 1e9, as float seconds.
//
//	cputime_process_cpu_seconds_total{pid,name,start,mode}    counter; mode "user" or "system"
//	cputime_process_start_time_seconds{pid,name,start}        gauge; creation time, Unix seconds
//	cputime_process_threads{pid,name,start}                   gauge; live processes
//	cputime_process_exit_time_seconds{pid,name,start}         gauge; exited processes, for ExitedKeep
//	cputime_thread_cpu_seconds_total{pid,tid,name,start,mode} counter; with Options.Threads
//	cputime_thread_start_time_seconds{pid,tid,name,start}     gauge; with Options.Threads
//	cputime_thread_exit_time_seconds{pid,tid,name,start}      gauge; with Options.Threads
//	cputime_thread_series_dropped_total                       counter; threads left out by the cap
//	cputime_exited_series_dropped_total                       counter; exited tasks beyond MaxExited
//	cputime_exit_records_dropped_total                        counter; exit records the kernel dropped
//	cputime_exit_records                                      gauge; 1 where exits come from exit records
//	cputime_unseen_tasks_total                                counter; when every process is watched
//	cputime_exits_not_final_total                             counter; without exit records: exits without final times
//	cputime_process_access_denied{pid}                        gauge; processes that may not be read
//	cputime_processes_access_denied                           gauge; their number, per scrape
//	cputime_read_errors_total                                 counter
//	cputime_scrape_duration_seconds                           gauge
//	cputime_collect_errors_total{reason}                      counter; refresh, metric (walk: CgroupCollector)
//
// The CPU counters are the sampler's: the exact run time (the process CPU
// clock, exited threads included; a thread's schedstat) split between user
// and system mode by the kernel's tick samples, and neither part ever goes
// back while the task lives. Creation times come from the task's start
// time in CLOCK_BOOTTIME ticks plus CLOCK_REALTIME − CLOCK_BOOTTIME, never
// from /proc/stat's btime (whole seconds, stale after a clock step).
//
// # Identity
//
// Every series carries start, the task's creation time in Unix seconds to
// the hundredth (the kernel's tick, USER_HZ 100), fixed when the sampler
// first reports the task. The sampler binds each task to files the kernel
// never hands to another task, and reports a reused pid as a new task: it
// gets a start label of its own, with "_1", "_2" appended in the rare case
// that it started in the same tick as an earlier task with that pid whose
// series are still exported. So two tasks never share a series, and a
// counter never continues another task's. A clock step changes the
// creation time of every task; their start labels stay as first made.
//
// # Exits
//
// A task that exits is exported with its final values and its exit time
// for Options.ExitedKeep (2 minutes by default) after its exit was
// noticed, and in at least one scrape, then its series end; at most
// Options.MaxExited (10,000) are kept, the oldest dropped first and
// counted. Where the kernel sends its exit records (Linux taskstats, which
// needs CAP_NET_ADMIN in the initial namespaces: root on the host), every
// process's final CPU time comes from the record the kernel queues in
// do_exit, before its parent can reap it, and caught even for a process
// that came and went between two scrapes, which then gets a series of its
// own. A record is exact as of its last thread's last context switch or
// tick before the address-space teardown, which comes after it: about 34
// µs of a /bin/true, milliseconds of a large process. A scrape that finds
// the process still a zombie reads its times after the teardown, and that
// larger total is the one exported, whichever came first; a process reaped
// before any scrape saw it exited keeps the record's. The records are taken
// from the queue every 100 ms, and nothing else runs between scrapes: the
// work scales with the exits, not with the tasks. Without them, the
// collector refreshes every task every Options.SampleInterval (100 ms) to
// catch exits, and a process that lives less than that may be missed
// (cputime_unseen_tasks_total counts them); one its parent reaps between
// two refreshes ends its series with the times last read
// (cputime_exits_not_final_total counts them).
//
// cputime_unseen_tasks_total counts the tasks that should have had a
// series of their own and had none: processes, and with Options.Threads
// threads. With exit records it rises only for a thread whose record shows
// it came and went between two refreshes (a process's record gives it a
// series; a dropped record is counted in
// cputime_exit_records_dropped_total); without, it is the kernel's fork
// count less the tasks seen appear, which without Options.Threads counts
// the threads created too: an upper bound there.
//
// # Errors
//
// An error inside a collection (the tasks could not be read, a series
// could not be made) is sent to the registry as an invalid metric, which
// reports it (promhttp logs it with ContinueOnError), and counted in
// cputime_collect_errors_total; the rest of the collection goes on, the
// health metrics included.
//
// # Threads
//
// With Options.Threads the one sampler reads threads too, at each scrape
// (and each refresh); at most Options.MaxThreads live threads (1000) are
// exported by a scrape: those that used the most CPU since the previous
// scrape. A thread that exits is exported with its times as last read.
//
// # Cardinality
//
// The series are bounded by the tasks alive at a scrape plus those that
// exited within ExitedKeep, at most MaxExited; thread series by
// MaxThreads plus their exits. A host that starts 100 processes a second
// adds at most 12,000 exited processes in two minutes: the cap holds it at
// 10,000 and says so.
//
// Names (comm on Linux, at most 15 bytes, set freely by the process) and
// cgroup paths (named freely by anyone with a delegated subtree) are
// exported as valid UTF-8 with invalid bytes, control characters and other
// unprintable runes (bidirectional overrides) replaced by '?'
// (LabelValue).
package exporter
