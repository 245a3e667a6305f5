package procfs

import (
	"errors"
	iofs "io/fs"
	"testing"
)

func TestParseSchedstat(t *testing.T) {
	tests := []struct {
		in   string
		want Schedstat
	}{
		{"591748 0 1\n", Schedstat{591748, 0, 1}},
		{"591748 0 1", Schedstat{591748, 0, 1}},
		{"0 0 0\n", Schedstat{}},
		{"18446744073709551615 18446744073709551615 18446744073709551615\n", Schedstat{max64, max64, max64}},
		{"007 08 09\n", Schedstat{7, 8, 9}},
	}
	for _, tt := range tests {
		got, err := ParseSchedstat([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("ParseSchedstat(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSchedstatMalformed(t *testing.T) {
	for _, in := range []string{
		"", "\n", "1", "1 2", "1 2\n", "1 2 ", "1 2 3 4\n", "1 2 3 \n", "1 2 3\n\n", " 1 2 3\n",
		"1  2 3\n", "1\t2\t3\n", "1 2 3\r\n", "-1 2 3\n", "1 -2 3\n", "1 2 x\n", "a b c\n",
		"18446744073709551616 0 0\n", "0 0 18446744073709551616\n", "1 2 3\n4 5 6\n", "+1 2 3\n",
	} {
		if got, err := ParseSchedstat([]byte(in)); !errors.Is(err, ErrFileParse) {
			t.Errorf("ParseSchedstat(%q) = %+v, %v; want ErrFileParse", in, got, err)
		}
	}
}

func TestParseSchedstatAllocs(t *testing.T) {
	b := readFixture(t, "26231/task/26231/schedstat")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseSchedstat(b) }); n != 0 {
		t.Errorf("ParseSchedstat allocates %v times, want 0", n)
	}
}

func TestReadTaskSchedstatFixtures(t *testing.T) {
	fs := fixtureFS()
	tests := []struct {
		pid, tid int
		want     Schedstat
	}{
		{26231, 26231, Schedstat{1523074816, 48211357, 412}},
		{26231, 26232, Schedstat{402118734, 9120455, 95}},
		{26231, 26233, Schedstat{121736028, 1022311, 31}},
		{26240, 26240, Schedstat{5234011, 120034, 9}},
		{26260, 26261, Schedstat{max64, max64, max64}},
	}
	for _, tt := range tests {
		got, err := fs.ReadTaskSchedstat(tt.pid, tt.tid)
		if err != nil || got != tt.want {
			t.Errorf("ReadTaskSchedstat(%d, %d) = %+v, %v; want %+v", tt.pid, tt.tid, got, err, tt.want)
		}
	}
	if _, err := fs.ReadTaskSchedstat(26260, 26262); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("ReadTaskSchedstat of a vanished thread: %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.ReadTaskSchedstat(26270, 26270); !errors.Is(err, ErrFileParse) {
		t.Errorf("ReadTaskSchedstat of a truncated file: %v, want ErrFileParse", err)
	}
	if _, err := fs.ReadTaskSchedstat(-1, 1); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ReadTaskSchedstat(-1, 1): %v, want ErrInvalidID", err)
	}
}
