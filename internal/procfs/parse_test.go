package procfs

import (
	"strconv"
	"strings"
	"testing"
)

// parseUint against strconv.ParseUint at the edges of uint64, with and
// without leading zeros.
func TestParseUint(t *testing.T) {
	for _, in := range []string{
		"0", "9", "10", "18446744073709551615", "18446744073709551616",
		"99999999999999999999", "1844674407370955161", "9999999999999999999",
		"10000000000000000000", "0018446744073709551615", "0018446744073709551616",
		strings.Repeat("0", 50), strings.Repeat("0", 30) + "7", "", "-1", "+1", "1a", " 1",
	} {
		want, err := strconv.ParseUint(in, 10, 64)
		wantOK := err == nil && !strings.HasPrefix(in, "+")
		got, ok := parseUint([]byte(in))
		if ok != wantOK || ok && got != want {
			t.Errorf("parseUint(%q) = %d, %v; want %d, %v", in, got, ok, want, wantOK)
		}
	}
}
