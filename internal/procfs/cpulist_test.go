package procfs

import (
	"errors"
	"slices"
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
	for _, bad := range []string{"", "\n", "3-1", "a", "0-", "-1", "1,,2", "0-65536", "99999999999999999999"} {
		if got, err := ParseCPUList(bad); !errors.Is(err, ErrFileParse) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want ErrFileParse", bad, got, err)
		}
	}
}
