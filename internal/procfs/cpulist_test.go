package procfs

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-3\n", []int{0, 1, 2, 3}},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}},
		{" 5 ", []int{5}},
	} {
		if got, err := ParseCPUList(tc.in); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// Ranges repeated past MaxCPU numbers in all: no kernel writes that.
	repeated := strings.Repeat("0-65535,", 2) + "0"
	for _, bad := range []string{"", "\n", "3-1", "a", "0-", "-1", "1,,2", "0-65536", "99999999999999999999", repeated} {
		if got, err := ParseCPUList(bad); !errors.Is(err, ErrFileParse) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want ErrFileParse", bad, got, err)
		}
	}
}

// Whatever the list, ParseCPUList never returns more than MaxCPU numbers,
// each below MaxCPU.
func FuzzParseCPUList(f *testing.F) {
	f.Add("0-3,8")
	f.Add("0-65535,0")
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 || len(cpus) > MaxCPU {
			t.Fatalf("%q: %d CPUs", s, len(cpus))
		}
		for _, c := range cpus {
			if c < 0 || c >= MaxCPU {
				t.Fatalf("%q: CPU %d", s, c)
			}
		}
	})
}
