package taskstats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
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
func DecodeStats(b []byte) (Stats, error) {
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
	s.Comm = string(comm)
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

// Decode decodes the netlink messages in b (one datagram, as received)
// sent by the taskstats family whose id is family: exit records
// (TASKSTATS_CMD_NEW) and replies to queries. A netlink error message
// becomes an error wrapping its syscall.Errno; NOOP and DONE messages are
// skipped. Anything truncated or inconsistent is an error wrapping
// ErrMalformed; Decode never panics.
func Decode(b []byte, family uint16) ([]Record, error) {
	var out []Record
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlmsgHdrLen {
			return out, fmt.Errorf("%w: %d bytes after the last message, less than a netlink header", ErrMalformed, len(rest))
		}
		ne := binary.NativeEndian
		n := int(ne.Uint32(rest))
		typ := ne.Uint16(rest[4:])
		if n < nlmsgHdrLen || n > len(rest) {
			return out, fmt.Errorf("%w: netlink message at offset %d claims %d bytes of %d", ErrMalformed, off, n, len(rest))
		}
		payload := rest[nlmsgHdrLen:n]
		off += align4(n)
		switch {
		case typ == nlmsgNoop || typ == nlmsgDone:
			continue
		case typ == nlmsgError:
			if err := decodeNlError(payload); err != nil {
				return out, err
			}
			continue // an acknowledgement
		case typ != family:
			return out, fmt.Errorf("%w: netlink message of type %d, not the taskstats family %d", ErrMalformed, typ, family)
		}
		recs, err := decodeGenl(payload)
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// decodeNlError returns the error an NLMSG_ERROR payload carries, nil for
// an acknowledgement.
func decodeNlError(p []byte) error {
	if len(p) < 4 {
		return fmt.Errorf("%w: netlink error message of %d bytes", ErrMalformed, len(p))
	}
	code := int32(binary.NativeEndian.Uint32(p))
	if code == 0 {
		return nil
	}
	if code > 0 {
		return fmt.Errorf("%w: netlink error code %d", ErrMalformed, code)
	}
	return fmt.Errorf("taskstats request refused by the kernel: %w", syscall.Errno(-code))
}

func decodeGenl(p []byte) ([]Record, error) {
	if len(p) < genlHdrLen {
		return nil, fmt.Errorf("%w: generic netlink message of %d bytes", ErrMalformed, len(p))
	}
	if cmd := p[0]; cmd != cmdNew {
		return nil, fmt.Errorf("%w: taskstats command %d, want TASKSTATS_CMD_NEW", ErrMalformed, cmd)
	}
	var out []Record
	err := walkAttrs(p[genlHdrLen:], func(typ uint16, v []byte) error {
		var kind Kind
		switch typ {
		case typeAggrPID:
			kind = Thread
		case typeAggrTGID:
			kind = Process
		default: // TASKSTATS_TYPE_NULL padding, or a later kernel's addition
			return nil
		}
		r, err := decodeAggr(kind, v)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func decodeAggr(kind Kind, v []byte) (Record, error) {
	r := Record{Kind: kind}
	var haveID, haveStats bool
	wantID := uint16(typePID)
	if kind == Process {
		wantID = typeTGID
	}
	err := walkAttrs(v, func(typ uint16, a []byte) error {
		switch typ {
		case wantID:
			if len(a) < 4 {
				return fmt.Errorf("%w: %s id attribute of %d bytes", ErrMalformed, kind, len(a))
			}
			r.ID, haveID = binary.NativeEndian.Uint32(a), true
		case typeStats:
			s, err := DecodeStats(a)
			if err != nil {
				return err
			}
			r.Stats, haveStats = s, true
		}
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	if !haveID || !haveStats {
		return Record{}, fmt.Errorf("%w: %s record without its id or statistics", ErrMalformed, kind)
	}
	return r, nil
}

// walkAttrs calls fn with the type (flags masked off) and value of each
// netlink attribute in b.
func walkAttrs(b []byte, fn func(typ uint16, v []byte) error) error {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlaHdrLen {
			return fmt.Errorf("%w: %d bytes after the last attribute, less than an attribute header", ErrMalformed, len(rest))
		}
		n := int(binary.NativeEndian.Uint16(rest))
		if n < nlaHdrLen || n > len(rest) {
			return fmt.Errorf("%w: attribute at offset %d claims %d bytes of %d", ErrMalformed, off, n, len(rest))
		}
		typ := binary.NativeEndian.Uint16(rest[2:]) & nlaTypeMask
		if err := fn(typ, rest[nlaHdrLen:n]); err != nil {
			return err
		}
		off += align4(n)
	}
	return nil
}

// appendAttr appends a netlink attribute, padded to 4 bytes.
func appendAttr(b []byte, typ uint16, v []byte) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint16(b, uint16(nlaHdrLen+len(v)))
	b = ne.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// appendMessage appends a netlink message of type typ carrying a generic
// netlink header (cmd, version) and the attributes attrs.
func appendMessage(b []byte, typ, flags uint16, seq uint32, cmd, version uint8, attrs []byte) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, uint32(nlmsgHdrLen+genlHdrLen+len(attrs)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 0) // port: the kernel's
	b = append(b, cmd, version, 0, 0)
	return append(b, attrs...)
}

// decodeFamilyID returns CTRL_ATTR_FAMILY_ID from a reply to
// CTRL_CMD_GETFAMILY.
func decodeFamilyID(b []byte) (uint16, error) {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlmsgHdrLen {
			break
		}
		ne := binary.NativeEndian
		n := int(ne.Uint32(rest))
		if n < nlmsgHdrLen || n > len(rest) {
			return 0, fmt.Errorf("%w: controller reply claims %d bytes of %d", ErrMalformed, n, len(rest))
		}
		typ := ne.Uint16(rest[4:])
		p := rest[nlmsgHdrLen:n]
		off += align4(n)
		switch typ {
		case nlmsgError:
			if err := decodeNlError(p); err != nil {
				return 0, err
			}
			continue
		case genlIDCtrl:
		default:
			continue
		}
		if len(p) < genlHdrLen {
			return 0, fmt.Errorf("%w: controller reply of %d bytes", ErrMalformed, len(p))
		}
		var id uint16
		err := walkAttrs(p[genlHdrLen:], func(t uint16, v []byte) error {
			if t == ctrlAttrFamilyID && len(v) >= 2 {
				id = binary.NativeEndian.Uint16(v)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if id != 0 {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%w: controller reply without a family id", ErrMalformed)
}
