package names

import "testing"

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kworker/0:1", "kworker/0:1"},
		{"", ""},
		{"a\x1b[2Jb", "a?[2Jb"},
		{"csi\u009b31m", "csi?31m"},
		{"raw\x9bbyte", "raw?byte"},
		{"evil\u202Etxt.exe", "evil?txt.exe"},
		{"iso\u2066x\u2069", "iso?x?"},
		{"zw\u200dj", "zw?j"},
		{"line\u2028sep", "line?sep"},
		{"tab\there", "tab?here"},
		{"del\x7f", "del?"},
		{"nbsp\u00a0x", "nbsp?x"},
		{"café 名前", "café 名前"},
		{"bad\xff\xfeutf8", "bad??utf8"},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := string(Append([]byte("x"), tc.in)); got != "x"+tc.want {
			t.Errorf("Append(x, %q) = %q, want %q", tc.in, got, "x"+tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Sanitize("plain-name") }); n != 0 {
		t.Errorf("a printable ASCII name allocates %v times", n)
	}
}
