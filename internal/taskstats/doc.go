// Package taskstats receives the kernel's final accounting record of every
// task that exits on the machine, and answers one-shot queries, through the
// TASKSTATS generic netlink family (Linux 2.6.19 and later, CONFIG_TASKSTATS).
//
// On Linux, Listen resolves the family id (CTRL_CMD_GETFAMILY), registers
// the socket for exits on every possible CPU
// (TASKSTATS_CMD_ATTR_REGISTER_CPUMASK with a list such as "0-1" from
// /sys/devices/system/cpu/possible) and decodes each TASKSTATS_CMD_NEW
// message into Records: one per exiting task (TASKSTATS_TYPE_AGGR_PID) and,
// when the last thread of a process that ever had several leaves, one for
// the whole process (TASKSTATS_TYPE_AGGR_TGID) in the same message. The
// kernel sends the message from do_exit, before the parent is notified, so a
// record is queued before a wait for the task can return. Listening and
// querying need CAP_NET_ADMIN in the initial user and pid namespaces: the
// kernel refuses registration from any other (add_del_listener), and Check
// says which condition fails before anything is tried.
//
// A listener that falls behind loses records: the kernel drops a message
// when the socket's receive queue is full, counts it in the socket's
// sk_drops (the Drops column of /proc/net/netlink) and makes the next
// receive fail with ENOBUFS. Listen asks for a large queue
// (SO_RCVBUFFORCE), and Next reports the number dropped, read from that
// column, whenever a receive failed with ENOBUFS; the count is never
// silently lost.
//
// The record (struct taskstats, include/uapi/linux/taskstats.h) is
// versioned and grows at its end; Decode reads each field by its offset for
// the version the kernel states, up to the length it sent (version 15 alone
// put fields in the middle; its layout is decoded as such). Two fields carry
// CPU time: CPURunVirtualTotal is the task's sum_exec_runtime, in ns;
// CPURunRealTotal and UTime/STime are the tick-sampled counters
// (task_cputime), whole scheduler ticks under tick-based accounting.
// Despite its name, cpu_run_real_total is not the exact one. The kernel
// brings sum_exec_runtime up to date at each context switch and scheduler
// tick, and reads it in do_exit without doing so: an exit record is exact
// as of the task's last switch or tick, short of the final value (which the
// parent's wait rusage has) by up to one tick, and, for the last thread of
// a process, by what do_exit runs after the record: the address-space
// teardown (exit_mm), unbounded by any tick (milliseconds for a process
// that touched hundreds of MB; docs/figures.md).
// Stats.Times turns a record into the times every reader reports: the
// exact total (the tick samples where the kernel keeps no delay
// accounting), the samples of each mode for the split, and whether the
// task was a kernel thread, all of whose time is kernel time.
// Decoding is plain Go and runs on every system; only the socket is Linux.
package taskstats
