package procfs

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"math"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

const max64 = math.MaxUint64

// statLine builds a 52-field stat line with the given name whose other
// fields are recognizable: utime 14, stime 15, starttime 22, processor 39...
func statLine(name string) string {
	f := make([]string, 0, 50)
	f = append(f, "S", "4")
	for i := 5; i <= 52; i++ {
		switch i {
		case statPriority:
			f = append(f, "-18")
		case statNice:
			f = append(f, "-19")
		case 7, 8, 38: // tty_nr, tpgid, exit_signal: -1 in real lines
			f = append(f, "-1")
		default:
			f = append(f, strconv.Itoa(i))
		}
	}
	return "77 (" + name + ") " + strings.Join(f, " ") + "\n"
}

func TestParseStat(t *testing.T) {
	synthetic := Stat{PID: 77, State: 'S', PPID: 4, Flags: 9, UTime: 14, STime: 15, CUTime: 16, CSTime: 17,
		Priority: -18, Nice: -19, NumThreads: 20, StartTime: 22, Processor: 39}
	with := func(s Stat, comm string) Stat { s.Comm = []byte(comm); return s }
	old := with(synthetic, "old")
	old.Processor = -1

	tests := []struct {
		name string
		in   string
		want Stat
	}{
		{"plain", statLine("cat"), with(synthetic, "cat")},
		{"parens", statLine("a) (b"), with(synthetic, "a) (b")},
		{"only parens", statLine(")()("), with(synthetic, ")()(")},
		{"trailing paren", statLine("a)"), with(synthetic, "a)")},
		{"newline", statLine("x y\nz"), with(synthetic, "x y\nz")},
		{"empty name", statLine(""), with(synthetic, "")},
		{"bytes", statLine("\x00\xff\t"), with(synthetic, "\x00\xff\t")},
		{"no newline", strings.TrimSuffix(statLine("cat"), "\n"), with(synthetic, "cat")},
		{"extra fields", strings.TrimSuffix(statLine("cat"), "\n") + " 53 -54\n", with(synthetic, "cat")},
		{"22 fields", "77 (old) S 4 5 6 -1 -1 9 10 11 12 13 14 15 16 17 -18 -19 20 21 22\n", old},
		{"38 fields", "77 (old) S 4 5 6 -1 -1 9 10 11 12 13 14 15 16 17 -18 -19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 -1\n", old},
		{"tabs and runs", "77 (cat)\tS  4 5 6 -1 -1 9 10 11 12 13 14 15 16 17 -18 -19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 -1 39 \r\n",
			with(synthetic, "cat")},
		{"min priority", "1 (rt) R 0 5 6 -1 -1 9 10 11 12 13 14 15 16 17 -9223372036854775808 9223372036854775807 20 21 22\n",
			Stat{PID: 1, Comm: []byte("rt"), State: 'R', Flags: 9, UTime: 14, STime: 15, CUTime: 16, CSTime: 17,
				Priority: math.MinInt64, Nice: math.MaxInt64, NumThreads: 20, StartTime: 22, Processor: -1}},
		{"max counters", "2147483647 (max) R 2147483647 5 6 -1 -1 9 10 11 12 13 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615 -100 0 2147483647 0 18446744073709551615\n",
			Stat{PID: math.MaxInt32, Comm: []byte("max"), State: 'R', PPID: math.MaxInt32, Flags: 9, UTime: max64, STime: max64,
				CUTime: max64, CSTime: max64, Priority: -100, NumThreads: math.MaxInt32, StartTime: max64, Processor: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.in)
			got, err := ParseStat(b)
			if err != nil {
				t.Fatalf("ParseStat(%q): %v", tt.in, err)
			}
			checkStat(t, got, tt.want)
			// Comm aliases the input, with its capacity cut so that an
			// append cannot overwrite the rest of the line.
			start := strings.IndexByte(tt.in, '(') + 1
			if len(got.Comm) > 0 && &got.Comm[0] != &b[start] {
				t.Error("Comm does not alias the input")
			}
			if cap(got.Comm) != len(got.Comm) {
				t.Errorf("cap(Comm) = %d, want %d", cap(got.Comm), len(got.Comm))
			}
		})
	}
}

func checkStat(t *testing.T, got, want Stat) {
	t.Helper()
	if !bytes.Equal(got.Comm, want.Comm) {
		t.Errorf("Comm = %q, want %q", got.Comm, want.Comm)
	}
	got.Comm, want.Comm = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseStatMalformed(t *testing.T) {
	good := statLine("cat")
	replace := func(field int, with string) string {
		f := strings.Fields(good)
		f[field-1] = with
		return strings.Join(f, " ") + "\n"
	}
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"newline", "\n"},
		{"spaces", "   "},
		{"no (", "77 cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"no )", "77 (cat S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{") before (", "77 )cat( S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"no pid", "(cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"pid glued", "77(cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"pid not a number", "7x (cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"pid negative", "-7 (cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"pid leading space", " 7 (cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"pid overflow int32", "2147483648 (cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n"},
		{"only name", "77 (cat)"},
		{"only name and state", "77 (cat) S\n"},
		{"truncated at 21", "77 (cat) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21\n"},
		{"truncated in name", "77 (ca"},
		{"state empty", "77 (cat)  \n"},
		{"state two letters", replace(3, "SS")},
		{"state digit", replace(3, "1")},
		{"ppid negative", replace(4, "-4")},
		{"ppid overflow", replace(4, "2147483648")},
		{"utime letters", replace(14, "1a")},
		{"utime negative", replace(14, "-14")},
		{"utime overflow", replace(14, "18446744073709551616")},
		{"utime huge", replace(14, "99999999999999999999999")},
		{"utime plus", replace(14, "+14")},
		{"stime hex", replace(15, "0x15")},
		{"cutime negative", replace(16, "-1")},
		{"cstime empty minus", replace(17, "-")},
		{"priority overflow", replace(18, "9223372036854775808")},
		{"nice underflow", replace(19, "-9223372036854775809")},
		{"num_threads negative", replace(20, "-20")},
		{"starttime overflow", replace(22, "18446744073709551616")},
		{"starttime float", replace(22, "2.5")},
		{"processor negative", replace(39, "-1")},
		{"other field letters", replace(5, "five")},
		{"late field letters", replace(52, "x")},
		{"unicode space", strings.Replace(good, " 22 ", " 22\u00a023 ", 1)},
		{"nul in fields", strings.Replace(good, " 22 ", " 22\x00 ", 1)},
		{"paren after fields", good + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseStat([]byte(tt.in))
			if !errors.Is(err, ErrFileParse) {
				t.Fatalf("ParseStat(%q) = %v, want an error wrapping ErrFileParse (got %+v)", tt.in, err, s)
			}
			if s.PID != 0 || s.Comm != nil {
				t.Errorf("ParseStat returned a partial Stat with its error: %+v", s)
			}
		})
	}
}

func TestReadStatFixtures(t *testing.T) {
	fs := fixtureFS()
	demo := Stat{PID: 26231, Comm: []byte("procfs-demo"), State: 'S', PPID: 1862, Flags: 4194560, UTime: 152, STime: 41,
		CUTime: 7, CSTime: 2, Priority: 20, NumThreads: 3, StartTime: 25314, Processor: 1}
	tests := []struct {
		pid  int
		want Stat
	}{
		{26231, demo},
		{26240, Stat{PID: 26240, Comm: []byte("a) (b"), State: 'R', PPID: 26231, Flags: 4194304, UTime: 5, STime: 2,
			Priority: 20, NumThreads: 1, StartTime: 30117, Processor: 0}},
		{26250, Stat{PID: 26250, Comm: []byte("x y\nz\\w"), State: 'S', PPID: 1, Flags: 4194368, STime: 1,
			Priority: 20, NumThreads: 1, StartTime: 31002, Processor: 1}},
		{26260, Stat{PID: 26260, Comm: []byte("counters"), State: 'S', PPID: 1, Flags: 4194368, UTime: max64, STime: max64,
			Priority: 39, Nice: 19, NumThreads: 3, StartTime: max64, Processor: 4095}},
	}
	for _, tt := range tests {
		got, err := fs.ReadStat(tt.pid)
		if err != nil {
			t.Errorf("ReadStat(%d): %v", tt.pid, err)
			continue
		}
		checkStat(t, got, tt.want)
	}

	// self is a symlink to 26231, as in /proc, where Git and the file
	// system keep symlinks (module zips drop them).
	if fi, err := os.Lstat(fs.Path("self")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if s, err := readStat(fs.Path("self", "stat")); err != nil || s.PID != 26231 {
			t.Errorf("reading self/stat: %+v, %v", s, err)
		}
	}

	if _, err := fs.ReadStat(26270); !errors.Is(err, ErrFileParse) {
		t.Errorf("ReadStat(26270) of a truncated line: %v, want ErrFileParse", err)
	}
	if _, err := fs.ReadStat(4242); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("ReadStat(4242) of a missing process: %v, want fs.ErrNotExist", err)
	}
	big := math.MaxInt32 // above pid_t when incremented (wraps negative on 32 bits)
	for _, pid := range []int{0, -1, big + 1} {
		if _, err := fs.ReadStat(pid); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ReadStat(%d): %v, want ErrInvalidID", pid, err)
		}
	}
}

func TestReadTaskStatFixtures(t *testing.T) {
	fs := fixtureFS()
	thread := func(tid int, comm string, state byte, ut, st, start uint64, cpu int) Stat {
		flags := uint64(1077936192) // PF_FORKNOEXEC|PF_WQ_WORKER-style bits of a secondary thread
		if tid == 26231 {
			flags = 4194560
		}
		return Stat{PID: tid, Comm: []byte(comm), State: state, PPID: 1862, Flags: flags, UTime: ut, STime: st,
			CUTime: 7, CSTime: 2, Priority: 20, NumThreads: 3, StartTime: start, Processor: cpu}
	}
	tests := []struct {
		pid, tid int
		want     Stat
	}{
		{26231, 26231, thread(26231, "procfs-demo", 'S', 100, 30, 25314, 1)},
		{26231, 26232, thread(26232, "procfs-demo", 'S', 40, 8, 25315, 0)},
		{26231, 26233, thread(26233, "demo-worker", 'R', 12, 3, 25316, 1)},
		{26240, 26240, Stat{PID: 26240, Comm: []byte("a) (b"), State: 'R', PPID: 26231, Flags: 4194304, UTime: 5, STime: 2,
			Priority: 20, NumThreads: 1, StartTime: 30117, Processor: 0}},
		{26260, 26261, Stat{PID: 26261, Comm: []byte("counters"), State: 'R', PPID: 1, Flags: 1077936192, UTime: max64, STime: max64,
			CUTime: max64, CSTime: max64, Priority: -100, NumThreads: 3, StartTime: max64, Processor: 4095}},
	}
	var sumU, sumS uint64
	for _, tt := range tests {
		got, err := fs.ReadTaskStat(tt.pid, tt.tid)
		if err != nil {
			t.Errorf("ReadTaskStat(%d, %d): %v", tt.pid, tt.tid, err)
			continue
		}
		checkStat(t, got, tt.want)
		if tt.pid == 26231 {
			sumU += got.UTime
			sumS += got.STime
		}
	}
	// The fixture is consistent: the process's times are its threads'.
	if p, err := fs.ReadStat(26231); err != nil || p.UTime != sumU || p.STime != sumS {
		t.Errorf("process 26231: %+v, %v; threads sum to utime %d stime %d", p, err, sumU, sumS)
	}

	// A thread listed in task/ whose files are gone: it exited between
	// readdir and open.
	if _, err := fs.ReadTaskStat(26260, 26262); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("ReadTaskStat of a vanished thread: %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.ReadTaskStat(26270, 26270); !errors.Is(err, ErrFileParse) {
		t.Errorf("ReadTaskStat of a line cut in the name: %v, want ErrFileParse", err)
	}
	if _, err := fs.ReadTaskStat(26231, 0); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ReadTaskStat(26231, 0): %v, want ErrInvalidID", err)
	}
}

func BenchmarkParseStat(b *testing.B) {
	line := readFixture(b, "26231/stat")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseStat(line); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseStatAllocs(t *testing.T) {
	line := readFixture(t, "26231/stat")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseStat(line) }); n != 0 {
		t.Errorf("ParseStat allocates %v times, want 0", n)
	}
}

// A name longer than the window ParseStat first searches for its end, with
// ')' inside and after the window, still ends at the last ')'.
func TestParseStatLongName(t *testing.T) {
	for _, n := range []int{statNameWindow - 2, statNameWindow, statNameWindow + 5, 3 * statNameWindow} {
		name := strings.Repeat("a) (b", n/5+1)[:n]
		s, err := ParseStat([]byte(statLine(name)))
		if err != nil {
			t.Fatalf("%d-byte name: %v", n, err)
		}
		if string(s.Comm) != name || s.State != 'S' || s.PPID != 4 {
			t.Errorf("%d-byte name: Comm %q, State %c, PPID %d", n, s.Comm, s.State, s.PPID)
		}
	}
}

// A stat file opened early reads like ReadStat: the fixtures' lines, with
// the reaped children's times (cutime, cstime) of the process.
func TestOpenStatFixtures(t *testing.T) {
	fs := fixtureFS()
	f, err := fs.OpenStat(26231)
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("OpenStat outside Linux: %v, want errors.ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := f.Read()
	if err != nil {
		t.Fatal(err)
	}
	checkStat(t, got, Stat{PID: 26231, Comm: []byte("procfs-demo"), State: 'S', PPID: 1862, Flags: 4194560, UTime: 152, STime: 41,
		CUTime: 7, CSTime: 2, Priority: 20, NumThreads: 3, StartTime: 25314, Processor: 1})
	if again, err := f.Read(); err != nil || again.CUTime != 7 {
		t.Errorf("a second read: %+v, %v", again, err)
	}

	trunc, err := fs.OpenStat(26270)
	if err != nil {
		t.Fatal(err)
	}
	defer trunc.Close()
	if _, err := trunc.Read(); !errors.Is(err, ErrFileParse) {
		t.Errorf("reading 26270's truncated line: %v, want ErrFileParse", err)
	}
	if _, err := fs.OpenStat(4242); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("OpenStat(4242) of a missing process: %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.OpenStat(0); !errors.Is(err, ErrInvalidID) {
		t.Errorf("OpenStat(0): %v, want ErrInvalidID", err)
	}
}
