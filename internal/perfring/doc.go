// Package perfring reads the records the kernel writes into a perf event's
// ring buffer (perf_event_open(2), "MMAP layout"), for the readers that
// open perf events: the recorder (FORK, COMM, EXIT and READ records of a
// process tree) and goroutines (context switches of its own threads).
//
// On Linux, Map maps an event's buffer: one metadata page (struct
// perf_event_mmap_page) and a power of two of data pages. The kernel
// writes records at data_head and publishes it with a store-release; the
// reader loads data_head (a load-acquire: the records before it are then
// visible), reads up to it, and hands the space back by storing data_tail
// with a store-release, so that the kernel, reading data_tail before it
// writes, never overwrites a record still being read. Go's atomic loads
// and stores are sequentially consistent, at least as strong as both. A
// record that wraps around the end of the data pages is copied whole into a
// scratch buffer. A buffer mapped writable, as Map maps it, is never
// overwritten: when it is full the kernel drops records and, once there is
// room, writes a PERF_RECORD_LOST record with their number, which Read
// counts (Lost) instead of passing it on. The model is cilium/ebpf's
// perf.Reader over its ring.
//
// One writer per buffer is the kernel's rule; a header the kernel could not
// have written (shorter than a header, not a multiple of 8 bytes, or past
// data_head) or a record the caller rejects makes Read skip the rest of
// what is published, and count it (Corrupt), rather than believe it.
package perfring
