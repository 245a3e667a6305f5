package procfs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseSysStat(t *testing.T) {
	tests := []struct {
		name, in string
		want     SysStat
	}{
		{"linux 2.6.0: 7 columns", "cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\nbtime 9\n",
			SysStat{Total: CPUStat{-1, 1, 2, 3, 4, 5, 6, 7, 0}, CPUs: []CPUStat{{0, 1, 2, 3, 4, 5, 6, 7, 0}}, BootTime: 9}},
		{"linux 2.4: 4 columns", "cpu 1 2 3 4\nbtime 9",
			SysStat{Total: CPUStat{-1, 1, 2, 3, 4, 0, 0, 0, 0}, BootTime: 9}},
		{"future columns", "cpu  1 2 3 4 5 6 7 8 9 10 11 12\nbtime 9\n",
			SysStat{Total: CPUStat{-1, 1, 2, 3, 4, 5, 6, 7, 8}, BootTime: 9}},
		{"offline cpu", "btime 9\ncpu  1 2 3 4\ncpu0 1 2 3 4\ncpu3 1 2 3 4\n",
			SysStat{Total: CPUStat{-1, 1, 2, 3, 4, 0, 0, 0, 0}, CPUs: []CPUStat{{0, 1, 2, 3, 4, 0, 0, 0, 0}, {3, 1, 2, 3, 4, 0, 0, 0, 0}}, BootTime: 9}},
		{"max", "cpu  18446744073709551615 0 0 0\nbtime 18446744073709551615\n",
			SysStat{Total: CPUStat{-1, max64, 0, 0, 0, 0, 0, 0, 0}, BootTime: max64}},
		{"other lines ignored", "intr 1 x\nwhatever\n\ncpu  1 2 3 4\nbtime 9\nctxt\n",
			SysStat{Total: CPUStat{-1, 1, 2, 3, 4, 0, 0, 0, 0}, BootTime: 9}},
	}
	for _, tt := range tests {
		got, err := ParseSysStat([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ParseSysStat(%q) =\n%+v, %v; want\n%+v", tt.name, tt.in, got, err, tt.want)
		}
	}
}

func TestParseSysStatMalformed(t *testing.T) {
	const ok = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\nbtime 1795315027\n"
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"no cpu", "cpu0 1 2 3 4\nbtime 9\n"},
		{"no btime", "cpu  1 2 3 4\n"},
		{"two cpu", ok + "cpu  1 2 3 4\n"},
		{"two btime", ok + "btime 9\n"},
		{"btime empty", "cpu  1 2 3 4\nbtime\n"},
		{"btime negative", "cpu  1 2 3 4\nbtime -9\n"},
		{"btime two values", "cpu  1 2 3 4\nbtime 9 9\n"},
		{"three columns", "cpu  1 2 3\nbtime 9\n"},
		{"negative column", strings.Replace(ok, "cpu0 1", "cpu0 -1", 1)},
		{"overflow column", strings.Replace(ok, "cpu0 1", "cpu0 18446744073709551616", 1)},
		{"letter column", strings.Replace(ok, " 10\n", " 1o\n", 1)},
		{"cpu letters", strings.Replace(ok, "cpu0", "cpux", 1)},
		{"cpu negative", strings.Replace(ok, "cpu0", "cpu-1", 1)},
		{"cpu out of order", ok + "cpu0 1 2 3 4\n"},
	}
	for _, tt := range tests {
		if got, err := ParseSysStat([]byte(tt.in)); !errors.Is(err, ErrFileParse) {
			t.Errorf("%s: ParseSysStat(%q) = %+v, %v; want ErrFileParse", tt.name, tt.in, got, err)
		}
	}
}

func TestReadSysStatFixture(t *testing.T) {
	got, err := fixtureFS().ReadSysStat()
	if err != nil {
		t.Fatal(err)
	}
	want := SysStat{
		Total: CPUStat{CPU: -1, User: 738, System: 774, Idle: 48791, IOWait: 78, SoftIRQ: 9, Steal: 19},
		CPUs: []CPUStat{
			{CPU: 0, User: 322, System: 349, Idle: 24498, IOWait: 6, SoftIRQ: 2, Steal: 8},
			{CPU: 1, User: 416, System: 425, Idle: 24293, IOWait: 72, SoftIRQ: 7, Steal: 11},
		},
		BootTime: 1795315027,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadSysStat() =\n%+v, want\n%+v", got, want)
	}
	if _, err := NewFS(t.TempDir()).ReadSysStat(); err == nil {
		t.Error("ReadSysStat of an empty root succeeded")
	}
}
