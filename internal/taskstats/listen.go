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
	// Unpolled keeps the socket out of the Go runtime's poller, for a
	// caller that takes the records with TryNext every few milliseconds:
	// a polled socket wakes a thread of this process at every exit on the
	// machine, which in a virtual machine costs the exiting task dearly
	// (a loop of /bin/true ran 20-28% slower beside a polled listener).
	// Next then blocks until a message comes and cannot be cancelled.
	Unpolled bool
}

// DefaultReceiveBuffer holds about 10,000 exit messages (each takes a
// 2-4 KiB buffer in the queue): a burst of that many exits is not lost
// while the reader is descheduled.
const DefaultReceiveBuffer = 32 << 20
