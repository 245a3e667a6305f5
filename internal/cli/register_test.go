package cli

import (
	"bytes"
	"strings"
	"testing"
)

// A registered subcommand is run with the arguments after its name, and
// its help follows the usage.
func TestRegister(t *testing.T) {
	var got []string
	Register("test-sub", func(env Env, args []string) int {
		got = args
		return 7
	}, "usage: cputime test-sub [X]\n\ntest-sub tests registering.\n")
	defer delete(registered, "test-sub")
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb}
	if code := Run(env, []string{"test-sub", "a", "--b"}); code != 7 || len(got) != 2 || got[0] != "a" || got[1] != "--b" {
		t.Errorf("Run(test-sub a --b) = %d with %q, want 7 with [a --b]", code, got)
	}
	if code := Run(env, []string{"-h"}); code != 0 || !strings.Contains(out.String(), "  test-sub    tests registering") {
		t.Errorf("-h = %d, %q: want the registered command listed", code, out.String())
	}
	out.Reset()
	if code := Run(env, []string{"help", "test-sub"}); code != 0 || out.String() != "usage: cputime test-sub [X]\n\ntest-sub tests registering.\n" {
		t.Errorf("help test-sub = %d, %q: want the registered help", code, out.String())
	}
	for _, name := range []string{"run", "test-sub"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, nil, "")
		}()
	}
}
