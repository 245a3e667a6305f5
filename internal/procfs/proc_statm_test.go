package procfs

import (
	"errors"
	"os"
	"testing"
)

func TestParseStatm(t *testing.T) {
	s, err := ParseStatm([]byte("5457 2048 1024 3 0 140 0\n"))
	if err != nil || s.Size != 5457 || s.Resident != 2048 {
		t.Errorf("ParseStatm = %+v, %v; want size 5457, resident 2048", s, err)
	}
	for _, bad := range []string{"", "12", "12 x 3", "-1 2", "12\n"} {
		if _, err := ParseStatm([]byte(bad)); !errors.Is(err, ErrFileParse) {
			t.Errorf("ParseStatm(%q): %v, want ErrFileParse", bad, err)
		}
	}
}

// The kernel's own statm parses: a resident set within the size.
func TestParseStatmSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	s, err := ParseStatm(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Resident == 0 || s.Resident > s.Size {
		t.Errorf("statm %q: resident %d of size %d", b, s.Resident, s.Size)
	}
}

func FuzzParseStatm(f *testing.F) {
	f.Add([]byte("5457 2048 1024 3 0 140 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatm(b)
		if err != nil && !errors.Is(err, ErrFileParse) {
			t.Fatalf("ParseStatm(%q): %v", b, err)
		}
		if err == nil && (s.Size == 0 && s.Resident == 0) && len(b) == 0 {
			t.Fatalf("ParseStatm(%q) parsed nothing without error", b)
		}
	})
}
