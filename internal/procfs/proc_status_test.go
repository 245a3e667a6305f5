package procfs

import (
	"errors"
	iofs "io/fs"
	"strconv"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name, in string
		want     Status
	}{
		{"minimal", "Tgid:\t1\nPid:\t2\nUid:\t0\t0\t0\t0\n", Status{Tgid: 1, Pid: 2}},
		{"no final newline", "Tgid:\t1\nPid:\t2\nUid:\t1\t2\t3\t4", Status{Tgid: 1, Pid: 2, Uid: [4]int{1, 2, 3, 4}}},
		{"unknown keys and values", "Name:\tsh\nWeird key:\t\x00\xff\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\nFuture:\n",
			Status{Name: "sh", Tgid: 1, Pid: 1}},
		{"name escapes", "Name:\t\\\\a\\nb\\x\\\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n",
			Status{Name: "\\a\nb\\x\\", Tgid: 1, Pid: 1}},
		{"name spaces and colon", "Name:\t a:b\t \nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n",
			Status{Name: " a:b\t ", Tgid: 1, Pid: 1}},
		{"empty name", "Name:\t\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n", Status{Tgid: 1, Pid: 1}},
		{"state", "State:\tI (idle)\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n", Status{State: 'I', Tgid: 1, Pid: 1}},
		{"state letter only", "State:\tZ\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n", Status{State: 'Z', Tgid: 1, Pid: 1}},
	}
	for _, tt := range tests {
		got, err := ParseStatus([]byte(tt.in))
		if err != nil || got != tt.want {
			t.Errorf("%s: ParseStatus(%q) = %+v, %v; want %+v", tt.name, tt.in, got, err, tt.want)
		}
	}
}

func TestParseStatusMalformed(t *testing.T) {
	const ok = "Tgid:\t1\nPid:\t2\nUid:\t0\t0\t0\t0\n"
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"newline", "\n"},
		{"no Tgid", "Pid:\t2\nUid:\t0\t0\t0\t0\n"},
		{"no Pid", "Tgid:\t1\nUid:\t0\t0\t0\t0\n"},
		{"no Uid", "Tgid:\t1\nPid:\t2\n"},
		{"line without colon", ok + "garbage\n"},
		{"blank line", "Tgid:\t1\n\nPid:\t2\nUid:\t0\t0\t0\t0\n"},
		{"unescaped newline in name", "Name:\ta\nb\n" + ok},
		{"Tgid empty", strings.Replace(ok, "Tgid:\t1", "Tgid:\t", 1)},
		{"Tgid negative", strings.Replace(ok, "Tgid:\t1", "Tgid:\t-1", 1)},
		{"Pid letters", strings.Replace(ok, "Pid:\t2", "Pid:\t2a", 1)},
		{"Pid overflow", strings.Replace(ok, "Pid:\t2", "Pid:\t2147483648", 1)},
		{"PPid overflow", ok + "PPid:\t99999999999999999999999\n"},
		{"Uid three", strings.Replace(ok, "Uid:\t0\t0\t0\t0", "Uid:\t0\t0\t0", 1)},
		{"Uid five", strings.Replace(ok, "Uid:\t0\t0\t0\t0", "Uid:\t0\t0\t0\t0\t0", 1)},
		{"Uid negative", strings.Replace(ok, "Uid:\t0\t0\t0\t0", "Uid:\t-1\t0\t0\t0", 1)},
		{"Uid above uid_t", strings.Replace(ok, "Uid:\t0\t0\t0\t0", "Uid:\t4294967296\t0\t0\t0", 1)},
		{"Gid letters", ok + "Gid:\t0\tx\t0\t0\n"},
		{"Threads negative", ok + "Threads:\t-3\n"},
		{"State empty", ok + "State:\t\n"},
		{"State digit", ok + "State:\t1 (one)\n"},
		{"State word", ok + "State:\tsleeping\n"},
	}
	for _, tt := range tests {
		if got, err := ParseStatus([]byte(tt.in)); !errors.Is(err, ErrFileParse) {
			t.Errorf("%s: ParseStatus(%q) = %+v, %v; want ErrFileParse", tt.name, tt.in, got, err)
		}
	}
}

func TestReadStatusFixtures(t *testing.T) {
	fs := fixtureFS()
	u := func(a, b, c, d int) [4]int { return [4]int{a, b, c, d} }
	tests := []struct {
		pid  int
		want Status
	}{
		{26231, Status{Name: "procfs-demo", State: 'S', Tgid: 26231, Pid: 26231, PPid: 1862,
			Uid: u(1000, 1000, 1000, 1000), Gid: u(1000, 1000, 1000, 1000), Threads: 3}},
		{26240, Status{Name: "a) (b", State: 'R', Tgid: 26240, Pid: 26240, PPid: 26231,
			Uid: u(1000, 1001, 1002, 1003), Gid: u(100, 101, 102, 103), Threads: 1}},
		{26250, Status{Name: "x y\nz\\w", State: 'S', Tgid: 26250, Pid: 26250, PPid: 1, Threads: 1}},
	}
	if strconv.IntSize == 64 { // 4294967294 does not fit in a 32-bit int
		var id uint64 = 4294967294 // a constant int would not compile for 32 bits
		n := int(id)
		tests = append(tests, struct {
			pid  int
			want Status
		}{26260, Status{Name: "counters", State: 'S', Tgid: 26260, Pid: 26260, PPid: 1,
			Uid: u(n, n, n, n), Gid: u(n, n, n, n), Threads: 3}})
	}
	for _, tt := range tests {
		got, err := fs.ReadStatus(tt.pid)
		if err != nil || got != tt.want {
			t.Errorf("ReadStatus(%d) = %+v, %v; want %+v", tt.pid, got, err, tt.want)
		}
		// The status name is the stat name, escaped differently.
		if s, err := fs.ReadStat(tt.pid); err != nil || string(s.Comm) != got.Name {
			t.Errorf("stat of %d: Comm %q, %v; status Name %q", tt.pid, s.Comm, err, got.Name)
		}
	}
	if _, err := fs.ReadStatus(26270); !errors.Is(err, ErrFileParse) {
		t.Errorf("ReadStatus of a truncated file: %v, want ErrFileParse", err)
	}
	if _, err := fs.ReadStatus(4242); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("ReadStatus(4242): %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.ReadStatus(0); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ReadStatus(0): %v, want ErrInvalidID", err)
	}
}
