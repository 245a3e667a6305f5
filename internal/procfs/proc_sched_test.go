package procfs

import (
	"errors"
	"testing"
)

func TestParseSchedExecStart(t *testing.T) {
	good := "sleep (6708, #threads: 1)\n---\nse.exec_start                                :       2319397.169141\nse.vruntime : 1.000000\n"
	if ns, err := ParseSchedExecStart([]byte(good)); err != nil || ns != 2319397169141 {
		t.Errorf("got %d, %v; want 2319397169141", ns, err)
	}
	for _, bad := range []string{
		"",
		"se.exec_start : 12\n",
		"se.exec_start : 12.34\n",
		"se.exec_start   2319397.169141\n",
		"se.exec_start : -1.000000\n",
		"se.exec_start : 99999999999999999999.000000\n",
		"se.vruntime : 1.000000\n",
	} {
		if _, err := ParseSchedExecStart([]byte(bad)); !errors.Is(err, ErrFileParse) {
			t.Errorf("%q: %v, want ErrFileParse", bad, err)
		}
	}
}

func FuzzParseSchedExecStart(f *testing.F) {
	f.Add([]byte("se.exec_start : 2319397.169141\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseSchedExecStart(b) // must not panic
	})
}
