package win32_test

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/win32"
)

// A vector is one line of testdata/vectors.txt: a call, its arguments, and
// what Windows returns. Where Wine 8 returns something else, wine holds
// Wine's result and why holds the reason Windows' is the one expected.
type vector struct {
	line     int
	fn       string
	args     string
	expected string
	wine     string
	why      string
}

// readVectors parses testdata/vectors.txt; its header describes the format.
func readVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		v := vector{line: n}
		fields := strings.Split(text, " | ")
		switch len(fields) {
		case 1:
		case 3:
			w, ok := strings.CutPrefix(fields[1], "wine -> ")
			if !ok {
				t.Fatalf("vectors.txt:%d: second field %q does not start with \"wine -> \"", n, fields[1])
			}
			v.wine, v.why = w, fields[2]
		default:
			t.Fatalf("vectors.txt:%d: %d fields separated by \" | \", want 1 or 3", n, len(fields))
		}
		call, expected, ok := strings.Cut(fields[0], " -> ")
		if !ok {
			t.Fatalf("vectors.txt:%d: no \" -> \" in %q", n, fields[0])
		}
		v.fn, v.args, _ = strings.Cut(call, " ")
		v.expected = expected
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("vectors.txt has no vectors")
	}
	return vs
}

// TestVectors checks every conversion of package win32 against the results
// of the real Win32 calls recorded in testdata/vectors.txt (made by
// testdata/vectors.c). On Linux this checks cputime's implementation against
// Windows' results; on Windows it checks that win32 passes the native calls
// through. Under Wine, the lines where Wine is known to differ from Windows
// are skipped with the reason.
func TestVectors(t *testing.T) {
	wine := runningOnWine()
	for _, v := range readVectors(t) {
		t.Run(fmt.Sprintf("line%d_%s", v.line, v.fn), func(t *testing.T) {
			if wine && v.wine != "" {
				t.Skipf("Wine 8 differs from Windows here: %s %s gives %s under Wine, %s on Windows: %s",
					v.fn, v.args, v.wine, v.expected, v.why)
			}
			if strings.Contains(v.fn, "Local") {
				// Windows and cputime both apply the offset in force now.
				if name, offset := time.Now().Zone(); offset != 0 {
					t.Skipf("the local-time vectors are for UTC; the local time zone is %s (UTC%+ds)", name, offset)
				}
			}
			got, err := callVector(v)
			if err != nil {
				t.Fatalf("vectors.txt:%d: %v", v.line, err)
			}
			if got != v.expected {
				t.Errorf("vectors.txt:%d: %s %s = %s, want %s", v.line, v.fn, v.args, got, v.expected)
			}
		})
	}
}

// callVector makes the call v describes and formats its result as
// vectors.c does.
func callVector(v vector) (string, error) {
	switch v.fn {
	case "FileTimeToSystemTime":
		ft, err := parseFiletime(v.args)
		if err != nil {
			return "", err
		}
		var st win32.Systemtime
		if err := win32.FileTimeToSystemTime(&ft, &st); err != nil {
			return formatErr(err)
		}
		return "ok " + formatSystemtime(st), nil
	case "SystemTimeToFileTime":
		st, err := parseSystemtime(v.args)
		if err != nil {
			return "", err
		}
		var ft win32.Filetime
		if err := win32.SystemTimeToFileTime(&st, &ft); err != nil {
			return formatErr(err)
		}
		return "ok " + formatFiletime(ft), nil
	case "FileTimeToDosDateTime":
		ft, err := parseFiletime(v.args)
		if err != nil {
			return "", err
		}
		var date, tm uint16
		if err := win32.FileTimeToDosDateTime(&ft, &date, &tm); err != nil {
			return formatErr(err)
		}
		return fmt.Sprintf("ok 0x%04x 0x%04x", date, tm), nil
	case "DosDateTimeToFileTime":
		var date, tm uint16
		if _, err := fmt.Sscanf(v.args, "0x%x 0x%x", &date, &tm); err != nil {
			return "", fmt.Errorf("parsing MS-DOS date and time %q: %v", v.args, err)
		}
		var ft win32.Filetime
		if err := win32.DosDateTimeToFileTime(date, tm, &ft); err != nil {
			return formatErr(err)
		}
		return "ok " + formatFiletime(ft), nil
	case "CompareFileTime":
		a, b, ok := strings.Cut(v.args, " ")
		if !ok {
			return "", fmt.Errorf("CompareFileTime needs two FILETIMEs, got %q", v.args)
		}
		fa, err := parseFiletime(a)
		if err != nil {
			return "", err
		}
		fb, err := parseFiletime(b)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(int(win32.CompareFileTime(&fa, &fb))), nil
	case "FileTimeToLocalFileTime", "LocalFileTimeToFileTime":
		in, err := parseFiletime(v.args)
		if err != nil {
			return "", err
		}
		convert := win32.FileTimeToLocalFileTime
		if v.fn == "LocalFileTimeToFileTime" {
			convert = win32.LocalFileTimeToFileTime
		}
		var out win32.Filetime
		if err := convert(&in, &out); err != nil {
			return formatErr(err)
		}
		return "ok " + formatFiletime(out), nil
	}
	return "", fmt.Errorf("unknown function %q", v.fn)
}

// formatErr formats a failure as vectors.c does, "err N". Each failure must
// be a win32.Errno that compares equal, with ==, to the ERROR_* constant of
// its number, as syscall.Errno values do on Windows.
func formatErr(err error) (string, error) {
	errno, ok := err.(win32.Errno)
	if !ok {
		return "", fmt.Errorf("error %v is a %T, not a win32.Errno", err, err)
	}
	if errno == win32.ERROR_INVALID_PARAMETER && err != win32.ERROR_INVALID_PARAMETER {
		return "", fmt.Errorf("error %v does not compare equal to win32.ERROR_INVALID_PARAMETER", err)
	}
	return fmt.Sprintf("err %d", uint64(errno)), nil
}

func parseFiletime(s string) (win32.Filetime, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return win32.Filetime{}, fmt.Errorf("parsing FILETIME %q: %v", s, err)
	}
	return win32.Filetime{LowDateTime: uint32(v), HighDateTime: uint32(v >> 32)}, nil
}

func formatFiletime(ft win32.Filetime) string {
	return fmt.Sprintf("0x%016x", uint64(ft.HighDateTime)<<32|uint64(ft.LowDateTime))
}

func parseSystemtime(s string) (win32.Systemtime, error) {
	var st win32.Systemtime
	_, err := fmt.Sscanf(s, "%d-%d-%d %d:%d:%d.%d w%d", &st.Year, &st.Month, &st.Day,
		&st.Hour, &st.Minute, &st.Second, &st.Milliseconds, &st.DayOfWeek)
	if err != nil {
		return st, fmt.Errorf("parsing SYSTEMTIME %q: %v", s, err)
	}
	return st, nil
}

func formatSystemtime(st win32.Systemtime) string {
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%03d w%d", st.Year, st.Month, st.Day,
		st.Hour, st.Minute, st.Second, st.Milliseconds, st.DayOfWeek)
}

// TestVectorsFormat checks that the vectors' own format round-trips, so a
// failure of TestVectors is the conversion's, not the parser's.
func TestVectorsFormat(t *testing.T) {
	for _, v := range readVectors(t) {
		switch v.fn {
		case "SystemTimeToFileTime":
			st, err := parseSystemtime(v.args)
			if err != nil {
				t.Fatalf("vectors.txt:%d: %v", v.line, err)
			}
			if got := formatSystemtime(st); got != v.args {
				t.Errorf("vectors.txt:%d: SYSTEMTIME %q formats back as %q", v.line, v.args, got)
			}
		case "FileTimeToSystemTime", "FileTimeToDosDateTime", "FileTimeToLocalFileTime", "LocalFileTimeToFileTime":
			ft, err := parseFiletime(v.args)
			if err != nil {
				t.Fatalf("vectors.txt:%d: %v", v.line, err)
			}
			if got := formatFiletime(ft); got != v.args {
				t.Errorf("vectors.txt:%d: FILETIME %q formats back as %q", v.line, v.args, got)
			}
		}
	}
}
