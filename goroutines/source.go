package goroutines

import "time"

// cpuSource tells the engine how much CPU each thread of the process got
// when: exact on-CPU intervals (perf context-switch records, Linux) or the
// growth of thread CPU clocks between samples (the fallback).
type cpuSource interface {
	// period: how often the recorder calls drain while recording.
	period() time.Duration
	// drain hands the engine what the source has learnt and raises its
	// watermark. final: the recording ended at end (monoNow, ns);
	// everything up to end must be handed over.
	drain(final bool, end int64)
	close()
	exact() bool
	// approx is "" when exact, else the sentence for Profile.Problems.
	approx() string
}
