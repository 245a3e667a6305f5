// Package engine is cputime's Linux engine: everything the API (package
// cputime) answers on Linux is computed here, from the kernel's interfaces
// below it (internal/kernel, internal/procfs, internal/account).
//
//   - task identity: a pidfd, or a /proc file kept open, binds a handle to
//     its task (handle_linux.go, pidfd_linux.go; for one-shot reads, the
//     pidfs identities of oneshot_pidfd_linux.go);
//   - clocks: the CPU clocks by pid and tid, and the tick samples beside
//     them (clock_linux.go, tickcache_linux.go);
//   - the split of the exact run time into user and kernel time
//     (adjust_linux.go, over internal/account's rule), and the checks of
//     what the kernel reports (task_linux.go);
//   - creation: the start time in ticks since boot, dated with the boot
//     offset of the query (task_linux.go, internal/account);
//   - exit evidence: the exit watcher and poller, and the scheduler's
//     record of the last switch-out (pidfd_linux.go, exitpoll_linux.go,
//     exitevidence_linux.go, exit_linux.go);
//   - the reads of /proc: enumeration (enum_linux.go, scan_linux.go), idle
//     time (idle_linux.go), on-CPU nanoseconds for cycle times
//     (cycles_linux.go), and hardware cycle counters (counter_linux.go).
//
// An Engine is a value over a Config: where /proc is, whether handles use
// pidfds, exit probes and schedstat files, and which clocks date and check
// (engine_linux.go). Default, the system's, serves package cputime and the
// sampler; a test makes its own with New, and no package variable
// configures the engine. The exit watcher and poller, and what concerns
// the calling process itself (its pseudo-handles, its threads), are the
// process's, shared by every Engine.
//
// Nothing here imports package cputime: calls go one way, API → engine →
// kernel interfaces (docs/ARCHITECTURE.md). The engine has its own Times,
// ThreadInfo and ProcessInfo, which the API copies into its documented
// types; its errors wrap the sentinels defined here and re-exported, with
// their documentation, by package cputime.
package engine
