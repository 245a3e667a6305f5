package recorder

import (
	"errors"
	"time"
)

// ErrNotSupported is wrapped by Start where the platform or the system's
// settings do not allow recording (not Linux; no start-up stub for the
// architecture; perf_event_paranoid above 2; perf_event_open refused by a
// seccomp filter; memfds not executable).
var ErrNotSupported = errors.New("recording the process tree is not supported")

// StatInterval is how often the recorder reads the stat and schedstat of
// every running task of the tree: the tick evidence for each task's
// user/kernel split, and the CPU samples the timeline draws.
const StatInterval = 50 * time.Millisecond

// Stats says how complete a recording is.
type Stats struct {
	// LostRecords is the number of records the kernel could not write
	// because a ring buffer was full (PERF_RECORD_LOST and
	// PERF_RECORD_LOST_SAMPLES). Zero means nothing was lost.
	LostRecords uint64
	// Incomplete is the number of exited threads whose final count did not
	// arrive whole (one READ record per CPU counter): their times are a
	// lower bound.
	Incomplete int
	// Running is the number of threads still running when the recording
	// stopped (descendants that outlived the top process): their times
	// were read from /proc then, their exit time is zero.
	Running int
	// Unpublished is the number of records the kernel wrote but did not
	// publish (a ring buffer whose data_head stopped moving: see the
	// package doc), which the recorder found and took nonetheless.
	Unpublished uint64
	// Corrupt is the number of stretches of a ring buffer where two CPUs
	// wrote over each other (see the package doc), skipped: each lost at
	// least one record, and the threads that lost a final count are
	// marked incomplete.
	Corrupt uint64
	// CPUs is the number of per-CPU counters and ring buffers.
	CPUs int
}
