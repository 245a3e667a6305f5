package taskstats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors. Each is wrapped with context; test with errors.Is.
var (
	// ErrMalformed: a message or record the kernel could not have sent
	// (truncated, an attribute overrunning its message, a record shorter
	// than the CPU times it must hold).
	ErrMalformed = errors.New("malformed taskstats message")
	// ErrNotSupported: no taskstats on this system (not Linux, or a kernel
	// built without CONFIG_TASKSTATS).
	ErrNotSupported = errors.New("taskstats not supported")
	// ErrPermission: the caller lacks CAP_NET_ADMIN.
	ErrPermission = errors.New("taskstats needs CAP_NET_ADMIN")
	// ErrNamespace: the caller is not in the initial user and pid
	// namespaces (a container), where the kernel refuses exit listeners.
	ErrNamespace = errors.New("taskstats exit records are only given to the initial user and pid namespaces")
)

// Kind says what a Record describes.
type Kind uint8

const (
	// Thread is one task's own record (TASKSTATS_TYPE_AGGR_PID): a thread,
	// or the only thread of a process.
	Thread Kind = iota + 1
	// Process is a whole process (TASKSTATS_TYPE_AGGR_TGID), sent with the
	// record of its last thread when that process ever had several.
	Process
)

func (k Kind) String() string {
	switch k {
	case Thread:
		return "thread"
	case Process:
		return "process"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Record is one decoded record: what it describes, the id the kernel sent
// beside it (a thread id for Thread, a process id for Process, in the
// initial pid namespace) and the statistics.
type Record struct {
	Kind Kind
	ID   uint32
	Stats
}

// Accounting flags in Stats.Flag (include/uapi/linux/acct.h).
const (
	AFORK  = 0x01 // forked but did not exec
	ASU    = 0x02 // used superuser privileges
	ACORE  = 0x08 // dumped core
	AXSIG  = 0x10 // killed by a signal
	AGROUP = 0x20 // the last thread of its process: the process is gone
)

// Stats is the part of struct taskstats that cputime uses. Fields the
// kernel's record is too old or too short to hold are zero; Size and
// Version say what was sent.
type Stats struct {
	Version uint16 // TASKSTATS_VERSION of the kernel that sent it
	Size    int    // bytes of struct taskstats the kernel sent

	// ExitCode is the wait status (exit status << 8 | signal, 0x80 for a
	// core dump) of a thread group leader; zero in other threads' records.
	ExitCode uint32
	Flag     uint8 // AFORK, ASU, ACORE, AXSIG, AGROUP
	Nice     int8
	Comm     string // the task's name (TASK_COMM_LEN), as the kernel has it
	UID, GID uint32
	PID      uint32 // the task (thread) id, initial pid namespace
	PPID     uint32 // the parent process id
	TGID     uint32 // the process id; version 12 and later, else 0

	BTime   uint64 // start, seconds since 1970 (whole seconds: ac_btime64, or ac_btime before version 10)
	ETime   uint64 // µs from the task's start to this record (CLOCK_MONOTONIC)
	TGETime uint64 // µs from the process leader's start to this record; version 12 and later

	UTime, STime uint64 // µs in user and kernel mode as tick-sampled (task_cputime)

	// CPURunRealTotal is utime + stime in ns (task_cputime), tick-sampled
	// under tick-based accounting despite its name; CPURunVirtualTotal is
	// sum_exec_runtime, the exact on-CPU time in ns as of the task's last
	// context switch or scheduler tick. Both need CONFIG_TASK_DELAY_ACCT
	// and are zero without it.
	CPURunRealTotal    uint64
	CPURunVirtualTotal uint64
	CPUCount           uint64 // times run on a CPU (sched_info.pcount)
	CPUDelayTotal      uint64 // ns runnable but waiting for a CPU

	MinFlt, MajFlt   uint64
	NVCSW, NIVCSW    uint64 // voluntary and involuntary context switches
	ExeDev, ExeInode uint64 // the executable; version 12 and later, zero for kernel threads
}

// Generic netlink and taskstats numbers (include/uapi/linux/netlink.h,
// genetlink.h, taskstats.h); the same on every architecture.
const (
	nlmsgHdrLen = 16
	genlHdrLen  = 4
	nlaHdrLen   = 4

	nlmsgNoop  = 1
	nlmsgError = 2
	nlmsgDone  = 3

	nlaTypeMask = 0x3fff // without NLA_F_NESTED, NLA_F_NET_BYTEORDER

	cmdGet = 1 // TASKSTATS_CMD_GET
	cmdNew = 2 // TASKSTATS_CMD_NEW

	typePID      = 1 // TASKSTATS_TYPE_PID
	typeTGID     = 2 // TASKSTATS_TYPE_TGID
	typeStats    = 3 // TASKSTATS_TYPE_STATS
	typeAggrPID  = 4 // TASKSTATS_TYPE_AGGR_PID
	typeAggrTGID = 5 // TASKSTATS_TYPE_AGGR_TGID
	typeNull     = 6 // TASKSTATS_TYPE_NULL: padding

	cmdAttrPID                      = 1 // TASKSTATS_CMD_ATTR_PID
	cmdAttrTGID                     = 2 // TASKSTATS_CMD_ATTR_TGID
	cmdAttrRegisterCPUMask          = 3
	cmdAttrDeregisterCPUMask        = 4
	familyName                      = "TASKSTATS"
	genlVersion                     = 1 // TASKSTATS_GENL_VERSION
	ctrlCmdGetFamily                = 3
	ctrlAttrFamilyID                = 1
	ctrlAttrFamilyName              = 2
	genlIDCtrl                      = 0x10
	nlmFRequest              uint16 = 0x1
	nlmFAck                  uint16 = 0x4
)

// layout holds the offsets of the fields Stats decodes in one version of
// struct taskstats.
type layout struct {
	cpuCount, cpuDelay, runReal, runVirtual, comm, uid, gid, pid, ppid, btime,
	etime, utime, stime, minflt, majflt, nvcsw, nivcsw, btime64, tgid, tgetime,
	exeDev, exeInode int
}

// Every version but 15 appends to the one before (the header's rule).
var stdLayout = layout{
	cpuCount: 16, cpuDelay: 24, runReal: 64, runVirtual: 72, comm: 80, uid: 120,
	gid: 124, pid: 128, ppid: 132, btime: 136, etime: 144, utime: 152,
	stime: 160, minflt: 168, majflt: 176, nvcsw: 272, nivcsw: 280,
	btime64: 344, tgid: 368, tgetime: 376, exeDev: 384, exeInode: 392,
}

// Version 15 (Linux 6.14 and 6.15 before the fix that made version 16)
// inserted a max and a min after each delay total: 3 pairs before
// cpu_run_real_total, 2 more before ac_btime64, 1 more before ac_tgid.
var v15Layout = layout{
	cpuCount: 16, cpuDelay: 24, runReal: 112, runVirtual: 120, comm: 128, uid: 168,
	gid: 172, pid: 176, ppid: 180, btime: 184, etime: 192, utime: 200,
	stime: 208, minflt: 216, majflt: 224, nvcsw: 320, nivcsw: 328,
	btime64: 424, tgid: 464, tgetime: 472, exeDev: 480, exeInode: 488,
}

const commLen = 32 // TS_COMM_LEN

// DecodeStats decodes one struct taskstats as the kernel sent it.
func DecodeStats(b []byte) (Stats, error) { return decodeStats(b, nil) }

// nameCache holds the task names decoded so far, so that a listener
// receiving thousands of exits of threads with a few names allocates each
// name once: Decode allocated two things per message, the name and the
// list of records, and Drain now reuses both (BenchmarkDrain: 34
// allocations per 1,000 records, 2,034 before). It forgets them all past
// maxNames.
type nameCache map[string]string

const maxNames = 1024

func (c *nameCache) name(b []byte) string {
	if s, ok := (*c)[string(b)]; ok {
		return s
	}
	if *c == nil || len(*c) >= maxNames {
		*c = make(nameCache)
	}
	s := string(b)
	(*c)[s] = s
	return s
}

func decodeStats(b []byte, names *nameCache) (Stats, error) {
	if len(b) < 2 {
		return Stats{}, fmt.Errorf("%w: taskstats record of %d bytes", ErrMalformed, len(b))
	}
	ne := binary.NativeEndian
	s := Stats{Version: ne.Uint16(b), Size: len(b)}
	if s.Version == 0 {
		return Stats{}, fmt.Errorf("%w: taskstats record of version 0", ErrMalformed)
	}
	l := stdLayout
	if s.Version == 15 {
		l = v15Layout
	}
	// The CPU times are the reason to read a record at all.
	if need := l.stime + 8; len(b) < need {
		return Stats{}, fmt.Errorf("%w: taskstats version %d record of %d bytes, shorter than the %d that hold the CPU times",
			ErrMalformed, s.Version, len(b), need)
	}
	u64 := func(off int) uint64 {
		if off+8 > len(b) {
			return 0
		}
		return ne.Uint64(b[off:])
	}
	u32 := func(off int) uint32 {
		if off+4 > len(b) {
			return 0
		}
		return ne.Uint32(b[off:])
	}
	s.ExitCode = u32(4)
	s.Flag = b[8]
	s.Nice = int8(b[9])
	s.CPUCount, s.CPUDelayTotal = u64(l.cpuCount), u64(l.cpuDelay)
	s.CPURunRealTotal, s.CPURunVirtualTotal = u64(l.runReal), u64(l.runVirtual)
	comm := b[l.comm : l.comm+commLen]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	if names != nil {
		s.Comm = names.name(comm)
	} else {
		s.Comm = string(comm)
	}
	s.UID, s.GID, s.PID, s.PPID = u32(l.uid), u32(l.gid), u32(l.pid), u32(l.ppid)
	s.BTime = uint64(u32(l.btime))
	s.ETime, s.UTime, s.STime = u64(l.etime), u64(l.utime), u64(l.stime)
	s.MinFlt, s.MajFlt = u64(l.minflt), u64(l.majflt)
	s.NVCSW, s.NIVCSW = u64(l.nvcsw), u64(l.nivcsw)
	if s.Version >= 10 && len(b) >= l.btime64+8 {
		s.BTime = u64(l.btime64)
	}
	if s.Version >= 12 {
		s.TGID, s.TGETime = u32(l.tgid), u64(l.tgetime)
		s.ExeDev, s.ExeInode = u64(l.exeDev), u64(l.exeInode)
	}
	return s, nil
}
