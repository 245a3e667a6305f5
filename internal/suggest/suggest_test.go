package suggest

import "testing"

func TestDidYouMeanWords(t *testing.T) {
	cmds := []string{"run", "wait", "top", "cpus", "exits", "help", "version", "completion"}
	flags := []string{"--json", "--pid", "--comm", "--duration", "-h", "--help"}
	for _, tc := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"hlep", cmds, `; did you mean "help"?`},
		{"tpo", cmds, `; did you mean "top"?`},
		{"verison", cmds, `; did you mean "version"?`},
		{"exit", cmds, `; did you mean "exits"?`},
		{"comp", cmds, `; did you mean "completion"?`},
		{"RUN", cmds, `; did you mean "run"?`},
		{"xyzzy", cmds, ""},
		{"a", cmds, ""},
		{"--jsno", flags, `; did you mean "--json"?`},
		{"--dur", flags, `; did you mean "--duration"?`},
		{"--durations", flags, `; did you mean "--duration"?`},
		{"--frobnicate", flags, ""},
		{"", cmds, ""},
	} {
		if got := DidYouMean(tc.word, tc.cands); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"abc", "ab", 1}, {"kitten", "sitting", 3}, {"", "run", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
