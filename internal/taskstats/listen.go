package taskstats

import "time"

// Batch is what one receive brought: the records of one message (an exit,
// or the reply to a query) and when it was received, or a report of
// records the kernel dropped.
type Batch struct {
	Records []Record
	// Received is the wall-clock instant the message was read: no earlier
	// than the exit it reports, later by the delivery delay (microseconds
	// while the reader keeps up; more when messages queue).
	Received time.Time
	// Dropped is the number of records the kernel dropped since the
	// previous report because the receive queue was full (the socket's
	// sk_drops). Zero in a batch that carries records.
	Dropped uint64
	// DroppedExact is false when the count could not be read and
	// Dropped is only a lower bound (1 per ENOBUFS).
	DroppedExact bool
}

// Options configure Listen.
type Options struct {
	// ReceiveBuffer is the socket's receive queue in bytes; 0 means
	// DefaultReceiveBuffer. As root it is set with SO_RCVBUFFORCE, beyond
	// net.core.rmem_max.
	ReceiveBuffer int
	// CPUs is the CPU list to register for, in the kernel's list format
	// ("0-3,8"); empty means every possible CPU.
	CPUs string
}

// DefaultReceiveBuffer holds about 10,000 exit messages (each takes a
// 2-4 KiB buffer in the queue): a burst of that many exits is not lost
// while the reader is descheduled.
const DefaultReceiveBuffer = 32 << 20
