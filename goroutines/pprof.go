package goroutines

import (
	"compress/gzip"
	"fmt"
	"io"
	"sort"
)

// WritePprof writes the Profile as a gzipped pprof profile (profile.proto),
// which go tool pprof opens: one sample type, cpu/nanoseconds; one sample
// per goroutine and innermost task, whose one frame is the goroutine's
// start function, labelled "function" and "task" (the task's type; absent
// outside tasks) and numbered "goroutine" and "task_id". The runtime's work
// outside goroutines is one more sample, frame "runtime (no goroutine)".
// Problems are the profile's comments.
//
// To see CPU per request type: go tool pprof -tags FILE, or
// go tool pprof -tagroot=task -top FILE.
func (p *Profile) WritePprof(w io.Writer) error {
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(p.pprofBytes()); err != nil {
		return fmt.Errorf("writing the pprof profile: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing the pprof profile: %w", err)
	}
	return nil
}

const runtimeFrame = "runtime (no goroutine)"

// Field numbers of profile.proto (github.com/google/pprof's
// proto/profile.proto), named as runtime/pprof's proto.go names them; only
// the fields written here. Unset fields are zero and not written.
const (
	// message Profile
	tagProfile_SampleType    = 1  // repeated ValueType
	tagProfile_Sample        = 2  // repeated Sample
	tagProfile_Location      = 4  // repeated Location
	tagProfile_Function      = 5  // repeated Function
	tagProfile_StringTable   = 6  // repeated string
	tagProfile_TimeNanos     = 9  // int64
	tagProfile_DurationNanos = 10 // int64
	tagProfile_PeriodType    = 11 // ValueType
	tagProfile_Period        = 12 // int64
	tagProfile_Comment       = 13 // repeated int64 (string table index)

	// message ValueType
	tagValueType_Type = 1 // int64 (string table index)
	tagValueType_Unit = 2 // int64 (string table index)

	// message Sample
	tagSample_Location = 1 // repeated uint64 (Location.id)
	tagSample_Value    = 2 // repeated int64
	tagSample_Label    = 3 // repeated Label

	// message Label
	tagLabel_Key = 1 // int64 (string table index)
	tagLabel_Str = 2 // int64 (string table index)
	tagLabel_Num = 3 // int64

	// message Location
	tagLocation_ID   = 1 // uint64
	tagLocation_Line = 4 // repeated Line

	// message Line
	tagLine_FunctionID = 1 // uint64 (Function.id)

	// message Function
	tagFunction_ID         = 1 // uint64
	tagFunction_Name       = 2 // int64 (string table index)
	tagFunction_SystemName = 3 // int64 (string table index)
)

// Protobuf wire types: what follows a field's key.
const (
	wireVarint = 0 // a varint
	wireBytes  = 2 // a varint length, then that many bytes
)

// pprofBytes encodes profile.proto by hand: the few messages it needs are
// plain varints and length-delimited fields.
func (p *Profile) pprofBytes() []byte {
	var b pbuf
	strs := map[string]int64{"": 0}
	table := []string{""}
	str := func(s string) int64 {
		if i, ok := strs[s]; ok {
			return i
		}
		strs[s] = int64(len(table))
		table = append(table, s)
		return int64(len(table) - 1)
	}
	valueType := func(field int, typ, unit string) {
		var m pbuf
		m.int(tagValueType_Type, str(typ))
		m.int(tagValueType_Unit, str(unit))
		b.msg(field, m)
	}
	valueType(tagProfile_SampleType, "cpu", "nanoseconds")

	funcs := map[string]uint64{}
	funcOf := func(name string) uint64 {
		if id, ok := funcs[name]; ok {
			return id
		}
		id := uint64(len(funcs) + 1)
		funcs[name] = id
		return id
	}
	type sample struct {
		fn          string
		gid, task   uint64
		cpu         int64
		withLabels  bool
		taskTypeStr string
	}
	var samples []sample
	keys := make([]pairKey, 0, len(p.pairs))
	for k := range p.pairs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gid != keys[j].gid {
			return keys[i].gid < keys[j].gid
		}
		return keys[i].task < keys[j].task
	})
	for _, k := range keys {
		fn := p.fn[k.gid]
		if fn == "" {
			fn = unknownFunction
		}
		samples = append(samples, sample{fn: fn, gid: k.gid, task: k.task, cpu: p.pairs[k], withLabels: true, taskTypeStr: p.taskType[k.task]})
	}
	if p.Runtime > 0 {
		samples = append(samples, sample{fn: runtimeFrame, cpu: int64(p.Runtime)})
	}
	for _, s := range samples {
		var m pbuf
		m.packed(tagSample_Location, []uint64{funcOf(s.fn)}) // location id = function id: one line each
		m.packed(tagSample_Value, []uint64{uint64(s.cpu)})
		label := func(key, sv string, num int64) {
			var l pbuf
			l.int(tagLabel_Key, str(key))
			if sv != "" {
				l.int(tagLabel_Str, str(sv))
			} else {
				l.int(tagLabel_Num, num)
			}
			m.msg(tagSample_Label, l)
		}
		if s.withLabels {
			label("function", s.fn, 0)
			label("goroutine", "", int64(s.gid))
			if s.task != 0 {
				typ := s.taskTypeStr
				if typ == "" {
					typ = "(begun before the recording)"
				}
				label("task", typ, 0)
				label("task_id", "", int64(s.task))
			}
		}
		b.msg(tagProfile_Sample, m)
	}
	names := make([]string, len(funcs))
	for name, id := range funcs {
		names[id-1] = name
	}
	for i, name := range names {
		id := uint64(i + 1)
		var line pbuf
		line.uint(tagLine_FunctionID, id)
		var loc pbuf
		loc.uint(tagLocation_ID, id)
		loc.msg(tagLocation_Line, line)
		b.msg(tagProfile_Location, loc)
		var fn pbuf
		fn.uint(tagFunction_ID, id)
		fn.int(tagFunction_Name, str(name))
		fn.int(tagFunction_SystemName, str(name))
		b.msg(tagProfile_Function, fn)
	}
	comments := []int64{}
	if !p.Exact {
		comments = append(comments, str("fallback: thread CPU clocks shared by running time (not exact)"))
	}
	for _, pr := range p.Problems {
		comments = append(comments, str(pr))
	}
	b.int(tagProfile_TimeNanos, p.Start.UnixNano())
	b.int(tagProfile_DurationNanos, int64(p.End.Sub(p.Start)))
	var pt pbuf
	pt.int(tagValueType_Type, str("cpu"))
	pt.int(tagValueType_Unit, str("nanoseconds"))
	for _, s := range table { // the string table last: every str() call is above
		b.bytes(tagProfile_StringTable, []byte(s))
	}
	b.msg(tagProfile_PeriodType, pt)
	b.int(tagProfile_Period, 1)
	for _, c := range comments {
		b.int(tagProfile_Comment, c)
	}
	return b
}

// pbuf is a protobuf message being written.
type pbuf []byte

func (b *pbuf) varint(x uint64) {
	for x >= 0x80 {
		*b = append(*b, byte(x)|0x80)
		x >>= 7
	}
	*b = append(*b, byte(x))
}

func (b *pbuf) key(field, wire int) { b.varint(uint64(field)<<3 | uint64(wire)) }

func (b *pbuf) uint(field int, x uint64) {
	if x == 0 {
		return
	}
	b.key(field, wireVarint)
	b.varint(x)
}

func (b *pbuf) int(field int, x int64) { b.uint(field, uint64(x)) }

func (b *pbuf) bytes(field int, s []byte) {
	b.key(field, wireBytes)
	b.varint(uint64(len(s)))
	*b = append(*b, s...)
}

func (b *pbuf) msg(field int, m pbuf) { b.bytes(field, m) }

func (b *pbuf) packed(field int, xs []uint64) {
	var m pbuf
	for _, x := range xs {
		m.varint(x)
	}
	b.bytes(field, m)
}
