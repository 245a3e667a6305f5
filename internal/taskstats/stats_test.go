package taskstats

import (
	"encoding/binary"
	"errors"
	"math"
	"syscall"
	"testing"
)

// fixture is one struct taskstats laid out as a kernel of version v sends
// it, size bytes long.
type fixture struct {
	v                                  uint16
	size                               int
	exitCode                           uint32
	flag                               uint8
	comm                               string
	pid, ppid, tgid, uid               uint32
	btime32                            uint32
	btime64, etime, tgetime, utime     uint64
	stime, runReal, runVirtual, nvcsw  uint64
	nivcsw, cpuCount, exeDev, exeInode uint64
}

func (f fixture) bytes() []byte {
	b := make([]byte, max(f.size, 1024))
	l := stdLayout
	if f.v == 15 {
		l = v15Layout
	}
	ne := binary.NativeEndian
	put64 := func(off int, v uint64) {
		if off+8 <= len(b) {
			ne.PutUint64(b[off:], v)
		}
	}
	put32 := func(off int, v uint32) {
		if off+4 <= len(b) {
			ne.PutUint32(b[off:], v)
		}
	}
	ne.PutUint16(b, f.v)
	put32(4, f.exitCode)
	b[8] = f.flag
	put64(l.cpuCount, f.cpuCount)
	put64(l.runReal, f.runReal)
	put64(l.runVirtual, f.runVirtual)
	copy(b[l.comm:l.comm+commLen], f.comm)
	put32(l.uid, f.uid)
	put32(l.pid, f.pid)
	put32(l.ppid, f.ppid)
	put32(l.btime, f.btime32)
	put64(l.etime, f.etime)
	put64(l.utime, f.utime)
	put64(l.stime, f.stime)
	put64(l.nvcsw, f.nvcsw)
	put64(l.nivcsw, f.nivcsw)
	if f.v >= 10 {
		put64(l.btime64, f.btime64)
	}
	if f.v >= 12 {
		put32(l.tgid, f.tgid)
		put64(l.tgetime, f.tgetime)
		put64(l.exeDev, f.exeDev)
		put64(l.exeInode, f.exeInode)
	}
	return b[:f.size]
}

var v16Thread = fixture{
	v: 16, size: 560, exitCode: 3 << 8, flag: AGROUP, comm: "worker ) (x",
	pid: 4321, ppid: 1, tgid: 4300, uid: 1000, btime32: 1795432100,
	btime64: 1795432100, etime: 123456, tgetime: 223456, utime: 40000,
	stime: 8000, runReal: 48000000, runVirtual: 51234567, nvcsw: 7,
	nivcsw: 9, cpuCount: 17, exeDev: 65024, exeInode: 99,
}

// aggr is a TASKSTATS_TYPE_AGGR_* attribute holding an id and a record.
func aggr(typ uint16, id uint32, stats []byte) []byte {
	idType := uint16(typePID)
	if typ == typeAggrTGID {
		idType = typeTGID
	}
	var in []byte
	in = appendAttr(in, idType, binary.NativeEndian.AppendUint32(nil, id))
	in = appendAttr(in, typeStats, stats)
	return appendAttr(nil, typ|0x8000, in) // NLA_F_NESTED, as newer kernels set it
}

const testFamily = 27

func exitMessage(attrs ...[]byte) []byte {
	var all []byte
	for _, a := range attrs {
		all = append(all, a...)
	}
	return appendMessage(nil, testFamily, 0, 0, cmdNew, genlVersion, all)
}

func TestDecodeThreadAndProcess(t *testing.T) {
	proc := fixture{v: 16, size: 560, runVirtual: 99000000, utime: 80000, stime: 12000, etime: 5}
	msg := exitMessage(
		aggr(typeAggrPID, 4321, v16Thread.bytes()),
		appendAttr(nil, typeNull, nil),
		aggr(typeAggrTGID, 4300, proc.bytes()),
	)
	recs, err := Decode(msg, testFamily)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d records, want 2", len(recs))
	}
	th, pr := recs[0], recs[1]
	want := Stats{
		Version: 16, Size: 560, ExitCode: 3 << 8, Flag: AGROUP, Comm: "worker ) (x",
		UID: 1000, PID: 4321, PPID: 1, TGID: 4300, BTime: 1795432100, ETime: 123456,
		TGETime: 223456, UTime: 40000, STime: 8000, CPURunRealTotal: 48000000,
		CPURunVirtualTotal: 51234567, CPUCount: 17, NVCSW: 7, NIVCSW: 9,
		ExeDev: 65024, ExeInode: 99,
	}
	if th.Kind != Thread || th.ID != 4321 || th.Stats != want {
		t.Errorf("thread record:\n got %v %d %+v\nwant thread 4321 %+v", th.Kind, th.ID, th.Stats, want)
	}
	if pr.Kind != Process || pr.ID != 4300 || pr.CPURunVirtualTotal != 99000000 || pr.UTime != 80000 || pr.STime != 12000 {
		t.Errorf("process record: %v %d %+v", pr.Kind, pr.ID, pr.Stats)
	}
}

// Version 15 put a max and min after each delay total, in the middle.
func TestDecodeVersion15(t *testing.T) {
	f := v16Thread
	f.v, f.size = 15, 656
	s, err := DecodeStats(f.bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPURunVirtualTotal != f.runVirtual || s.UTime != f.utime || s.STime != f.stime || s.Comm != f.comm ||
		s.PID != f.pid || s.TGID != f.tgid || s.BTime != f.btime64 || s.NIVCSW != f.nivcsw || s.ExeInode != f.exeInode {
		t.Errorf("version 15 decoded as %+v", s)
	}
	// The same bytes read with the standard layout would be wrong: the
	// offsets differ.
	if stdLayout.runVirtual == v15Layout.runVirtual {
		t.Fatal("layouts equal")
	}
}

// An old kernel's record: no ac_btime64 (version 10), no ac_tgid (12).
func TestDecodeOldVersion(t *testing.T) {
	f := v16Thread
	f.v, f.size = 8, 328
	f.btime32 = 1234567890
	s, err := DecodeStats(f.bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s.BTime != 1234567890 || s.TGID != 0 || s.TGETime != 0 || s.ExeInode != 0 || s.NVCSW != 7 || s.CPURunVirtualTotal != f.runVirtual {
		t.Errorf("version 8 decoded as %+v", s)
	}
	// Shorter than the switch counters: they are zero, the rest is there.
	f.size = 200
	s, err = DecodeStats(f.bytes())
	if err != nil {
		t.Fatal(err)
	}
	if s.NVCSW != 0 || s.UTime != f.utime || s.Size != 200 {
		t.Errorf("200-byte record decoded as %+v", s)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := exitMessage(aggr(typeAggrPID, 4321, v16Thread.bytes()))
	short := v16Thread
	short.size = 100
	noStats := exitMessage(appendAttr(nil, typeAggrPID, appendAttr(nil, typePID, []byte{1, 0, 0, 0})))
	badAttr := exitMessage([]byte{2, 0, 4, 0}) // attribute length 2 < its header
	overrun := exitMessage([]byte{200, 0, 4, 0, 1, 2, 3, 4})
	wrongCmd := appendMessage(nil, testFamily, 0, 0, cmdGet, 1, nil)
	wrongFamily := appendMessage(nil, testFamily+1, 0, 0, cmdNew, 1, nil)
	version0 := v16Thread
	version0.v = 0
	for name, b := range map[string][]byte{
		"truncated header":      good[:10],
		"truncated message":     good[:len(good)-1],
		"record too short":      exitMessage(aggr(typeAggrPID, 1, short.bytes())),
		"record version 0":      exitMessage(aggr(typeAggrPID, 1, version0.bytes())),
		"aggregate w/o stats":   noStats,
		"attribute too short":   badAttr,
		"attribute overruns":    overrun,
		"not TASKSTATS_CMD_NEW": wrongCmd,
		"another family":        wrongFamily,
		"trailing bytes":        append(append([]byte{}, good...), 1, 2, 3),
	} {
		_, err := Decode(b, testFamily)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
	// Every prefix of a good message is an error or nothing, never a panic.
	for i := range len(good) {
		if recs, err := Decode(good[:i], testFamily); err == nil && len(recs) > 0 {
			t.Errorf("prefix of %d bytes decoded to %d records", i, len(recs))
		}
	}
}

func TestDecodeNetlinkError(t *testing.T) {
	var b []byte
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, nlmsgHdrLen+4+nlmsgHdrLen)
	b = ne.AppendUint16(b, nlmsgError)
	b = ne.AppendUint16(b, 0)
	b = ne.AppendUint32(b, 1)
	b = ne.AppendUint32(b, 0)
	code := -int32(syscall.EPERM)
	b = ne.AppendUint32(b, uint32(code))
	b = append(b, make([]byte, nlmsgHdrLen)...)
	_, err := Decode(b, testFamily)
	if !errors.Is(err, syscall.EPERM) {
		t.Errorf("got %v, want EPERM", err)
	}
	ne.PutUint32(b[nlmsgHdrLen:], 0) // an acknowledgement
	if recs, err := Decode(b, testFamily); err != nil || len(recs) != 0 {
		t.Errorf("acknowledgement: %v, %v", recs, err)
	}
}

func TestDecodeFamilyID(t *testing.T) {
	attrs := appendAttr(nil, ctrlAttrFamilyName, append([]byte(familyName), 0))
	attrs = appendAttr(attrs, ctrlAttrFamilyID, binary.NativeEndian.AppendUint16(nil, 27))
	msg := appendMessage(nil, genlIDCtrl, 0, 1, 1, 2, attrs)
	id, err := decodeFamilyID(msg)
	if err != nil || id != 27 {
		t.Errorf("got %d, %v", id, err)
	}
	if _, err := decodeFamilyID(msg[:len(msg)-2]); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	proc := fixture{v: 16, size: 560, runVirtual: 1}
	f.Add(exitMessage(aggr(typeAggrPID, 4321, v16Thread.bytes()), aggr(typeAggrTGID, 4300, proc.bytes())))
	v15 := v16Thread
	v15.v, v15.size = 15, 656
	f.Add(exitMessage(aggr(typeAggrPID, 1, v15.bytes())))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Decode(b, testFamily)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Kind != Thread && r.Kind != Process {
				t.Fatalf("record of kind %v", r.Kind)
			}
			if r.Version == 0 || r.Size < stdLayout.stime+8 {
				t.Fatalf("record decoded from %d bytes of version %d", r.Size, r.Version)
			}
			// The conversion to times: an exact total is the record's own;
			// a tick total never falls short of the ticks it sums, or,
			// where those µs are past what 2^64 ns holds, saturates.
			tm := r.Times()
			if tm.Exact && tm.Total != r.CPURunVirtualTotal || !tm.Exact && tm.Total != math.MaxUint64 && tm.Total/1000 < max(r.UTime, r.STime) {
				t.Fatalf("times %+v of record %+v", tm, r.Stats)
			}
		}
	})
}
