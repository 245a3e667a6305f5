package procfs

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets check each parser against a naive one built from the
// standard library: whenever the fast parser accepts input, the naive parse
// must agree with it; and it must never panic.

func FuzzParseStat(f *testing.F) {
	for _, b := range fixtureFiles(f, "stat") {
		f.Add(b)
	}
	f.Add([]byte(statLine("a) (b")))
	f.Add([]byte("77 (old) S 4 5 6 -1 -1 9 10 11 12 13 14 15 16 17 -18 -19 20 21 22\n"))
	f.Add([]byte("1 () R 0 0 0 0 0 0 0 0 0 0 18446744073709551615 0 0 0 -9223372036854775808 0 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		s, err := ParseStat(b)
		if !bytes.Equal(b, in) {
			t.Fatal("ParseStat modified its input")
		}
		if err != nil {
			if !errors.Is(err, ErrFileParse) {
				t.Fatalf("error %v does not wrap ErrFileParse", err)
			}
			if !reflect.DeepEqual(s, Stat{}) {
				t.Fatalf("a zero Stat expected with the error, got %+v", s)
			}
			return
		}

		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if !bytes.Equal(s.Comm, b[open+1:close]) {
			t.Fatalf("Comm = %q, want %q", s.Comm, b[open+1:close])
		}
		if len(s.Comm) > 0 && &s.Comm[0] != &b[open+1] {
			t.Fatal("Comm is not a subslice of the input")
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
		if err != nil || pid != s.PID {
			t.Fatalf("PID = %d, naive %d, %v", s.PID, pid, err)
		}

		fields := strings.Fields(string(b[close+1:]))
		if len(fields) < statRequired-2 {
			t.Fatalf("accepted %d fields after the name", len(fields))
		}
		field := func(n int) string { return fields[n-3] }
		u := func(n int) uint64 {
			v, err := strconv.ParseUint(field(n), 10, 64)
			if err != nil {
				t.Fatalf("field %d %q: %v", n, field(n), err)
			}
			return v
		}
		i := func(n int) int64 {
			v, err := strconv.ParseInt(field(n), 10, 64)
			if err != nil {
				t.Fatalf("field %d %q: %v", n, field(n), err)
			}
			return v
		}
		want := Stat{
			PID: pid, Comm: s.Comm, State: field(statState)[0],
			PPID: int(i(statPPID)), Flags: u(statFlags),
			UTime: u(statUTime), STime: u(statSTime), CUTime: u(statCUTime), CSTime: u(statCSTime),
			Priority: i(statPriority), Nice: i(statNice),
			NumThreads: int(i(statNumThreads)),
			StartTime:  u(statStartTime),
			Processor:  -1,
		}
		if len(field(statState)) != 1 {
			t.Fatalf("state %q accepted", field(statState))
		}
		if len(fields) > statProcessor-3 {
			want.Processor = int(i(statProcessor))
		}
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("ParseStat = %+v\nnaive      %+v", s, want)
		}
		for n := statState + 1; n-3 < len(fields); n++ {
			if _, err := strconv.ParseInt(strings.TrimPrefix(field(n), "-"), 10, 0); err != nil && !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("field %d %q accepted", n, field(n))
			}
		}
	})
}

var schedstatRE = regexp.MustCompile(`^([0-9]+) ([0-9]+) ([0-9]+)\n?$`)

func FuzzParseSchedstat(f *testing.F) {
	for _, b := range fixtureFiles(f, "schedstat") {
		f.Add(b)
	}
	f.Add([]byte("0 0 0"))
	f.Add([]byte("1 2 3\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseSchedstat(b)
		// Naive: the kernel's format as a regular expression.
		var want Schedstat
		naiveOK := false
		if m := schedstatRE.FindSubmatch(b); m != nil {
			var errs [3]error
			want.RunTime, errs[0] = strconv.ParseUint(string(m[1]), 10, 64)
			want.WaitTime, errs[1] = strconv.ParseUint(string(m[2]), 10, 64)
			want.Timeslices, errs[2] = strconv.ParseUint(string(m[3]), 10, 64)
			naiveOK = errs[0] == nil && errs[1] == nil && errs[2] == nil
		}
		switch {
		case err != nil && !errors.Is(err, ErrFileParse):
			t.Fatalf("error %v does not wrap ErrFileParse", err)
		case (err == nil) != naiveOK:
			t.Fatalf("ParseSchedstat(%q) error %v, naive ok %v", b, err, naiveOK)
		case err == nil && got != want:
			t.Fatalf("ParseSchedstat(%q) = %+v, naive %+v", b, got, want)
		}
	})
}

// escapeName escapes a command name as proc_task_name does for status.
func escapeName(name string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(name)
}

func FuzzParseStatus(f *testing.F) {
	for _, b := range fixtureFiles(f, "status") {
		f.Add(b)
	}
	f.Add([]byte("Name:\t\\\\\\n\\\nTgid:\t1\nPid:\t1\nUid:\t0\t0\t0\t0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b)
		if err != nil {
			if !errors.Is(err, ErrFileParse) {
				t.Fatalf("error %v does not wrap ErrFileParse", err)
			}
			return
		}
		for _, key := range []string{"Tgid:", "Pid:", "Uid:"} {
			if !bytes.HasPrefix(b, []byte(key)) && !bytes.Contains(b, []byte("\n"+key)) {
				t.Fatalf("accepted without a %s line", key)
			}
		}
		if s.Tgid < 0 || s.Pid < 0 || s.PPid < 0 || s.Threads < 0 || s.Tgid > math.MaxInt32 || s.Pid > math.MaxInt32 {
			t.Fatalf("out of range: %+v", s)
		}
		// Print s as the kernel would and parse it again.
		var sb strings.Builder
		sb.WriteString("Name:\t" + escapeName(s.Name) + "\n")
		if s.State != 0 {
			sb.WriteString("State:\t" + string(s.State) + " (whatever)\n")
		}
		ids := func(v [4]int) string {
			return strconv.Itoa(v[0]) + "\t" + strconv.Itoa(v[1]) + "\t" + strconv.Itoa(v[2]) + "\t" + strconv.Itoa(v[3])
		}
		sb.WriteString("Tgid:\t" + strconv.Itoa(s.Tgid) + "\nPid:\t" + strconv.Itoa(s.Pid) + "\nPPid:\t" + strconv.Itoa(s.PPid) +
			"\nUid:\t" + ids(s.Uid) + "\nGid:\t" + ids(s.Gid) + "\nThreads:\t" + strconv.Itoa(s.Threads) + "\n")
		again, err := ParseStatus([]byte(sb.String()))
		if err != nil || again != s {
			t.Fatalf("reparsing %q: %+v, %v; want %+v", sb.String(), again, err, s)
		}
	})
}

func asciiFields(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
}

func FuzzParseSysStat(f *testing.F) {
	f.Add(readFixture(f, "stat"))
	f.Add([]byte("cpu 1 2 3 4\nbtime 9"))
	f.Add([]byte("btime 9\ncpu  1 2 3 4 5 6 7 8 9 10 11\ncpu7 1 2 3 4\ncpu9 1 2 3 4 5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSysStat(b)
		if err != nil {
			if !errors.Is(err, ErrFileParse) {
				t.Fatalf("error %v does not wrap ErrFileParse", err)
			}
			return
		}
		// Naive: split lines and fields, look up what was kept.
		want := SysStat{Total: CPUStat{CPU: -2}}
		for _, line := range strings.Split(string(b), "\n") {
			f := asciiFields(line)
			if len(f) == 0 {
				continue
			}
			if f[0] == "btime" {
				v, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil || len(f) != 2 {
					t.Fatalf("btime line %q accepted", line)
				}
				want.BootTime = v
				continue
			}
			num, ok := strings.CutPrefix(f[0], "cpu")
			if !ok {
				continue
			}
			c := CPUStat{CPU: -1}
			if num != "" {
				if c.CPU, err = strconv.Atoi(num); err != nil || c.CPU < 0 {
					t.Fatalf("cpu line %q accepted", line)
				}
			}
			var cols [8]uint64
			for i, v := range f[1:] {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatalf("column %q accepted", v)
				}
				if i < len(cols) {
					cols[i] = n
				}
			}
			c.User, c.Nice, c.System, c.Idle, c.IOWait, c.IRQ, c.SoftIRQ, c.Steal =
				cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7]
			if c.CPU == -1 {
				want.Total = c
			} else {
				want.CPUs = append(want.CPUs, c)
			}
		}
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("ParseSysStat = %+v\nnaive        %+v", s, want)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "26231", "2147483647", "2147483648", "0", "01", "-1", "+1", "self", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		n, aerr := strconv.Atoi(s)
		naiveOK := aerr == nil && n > 0 && n <= math.MaxInt32 && strconv.Itoa(n) == s
		switch {
		case err != nil && !errors.Is(err, ErrInvalidID):
			t.Fatalf("error %v does not wrap ErrInvalidID", err)
		case (err == nil) != naiveOK:
			t.Fatalf("ParseID(%q) = %d, %v; naive ok %v", s, id, err, naiveOK)
		case err == nil && id != n:
			t.Fatalf("ParseID(%q) = %d, want %d", s, id, n)
		}
	})
}
