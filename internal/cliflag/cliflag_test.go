package cliflag

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type opts struct {
	json, b, h bool
	out        string
	pid        int
	delay      string
}

func newSet(o *opts, interspersed bool) *Set {
	s := &Set{Interspersed: interspersed}
	s.Bool(&o.json, "--json", "-json")
	s.Bool(&o.b, "-b")
	s.Bool(&o.h, "-H")
	s.Path(&o.out, "-o", "--output")
	s.Func("a process id", "pid", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return errors.New("want a positive number")
		}
		o.pid = n
		return nil
	}, "--pid", "-p")
	s.Func("seconds", "", func(v string) error { o.delay = v; return nil }, "-d")
	return s
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args         []string
		interspersed bool
		want         opts
		rest         []string
	}{
		{[]string{"--json", "-o", "f", "cmd", "--json"}, false, opts{json: true, out: "f"}, []string{"cmd", "--json"}},
		{[]string{"-json", "--output=f", "--", "-o", "x"}, false, opts{json: true, out: "f"}, []string{"-o", "x"}},
		{[]string{"-o=-x", "true"}, false, opts{out: "-x"}, []string{"true"}},
		{[]string{"42", "--json", "--pid=7"}, true, opts{json: true, pid: 7}, []string{"42"}},
		{[]string{"-bH", "-d0.5", "-p", "3"}, true, opts{b: true, h: true, delay: "0.5", pid: 3}, nil},
		{[]string{"-d", "1", "-5"}, true, opts{delay: "1"}, []string{"-5"}},
		{[]string{"-o", "-", "x"}, false, opts{out: "-"}, []string{"x"}},
		{nil, false, opts{}, nil},
	} {
		var o opts
		rest, err := newSet(&o, c.interspersed).Parse(c.args)
		if err != nil || o != c.want || !slices.Equal(rest, c.rest) {
			t.Errorf("%q: %+v, %q, %v; want %+v, %q", c.args, o, rest, err, c.want, c.rest)
		}
	}
}

// Each misuse is a usage error that names the option and the cause, and
// a path option never takes an option as its file name.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "--", "true"}, `-o needs a file name, not the option "--"`},
		{[]string{"--output", "--json"}, `--output needs a file name, not the option "--json" (a value that begins with - is given as --output=--json)`},
		{[]string{"-o"}, "-o needs a file name"},
		{[]string{"-o="}, "-o needs a file name"},
		{[]string{"--pid="}, "--pid needs a process id"},
		{[]string{"--pid", "x"}, `--pid "x": want a positive number`},
		{[]string{"--jsn"}, `unknown option --jsn; did you mean "--json"?`},
		{[]string{"--json=1"}, "--json takes no value"},
		{[]string{"-bx"}, "unknown option -bx"},
		{[]string{"--\u202eevil"}, "unknown option --?evil"},
	} {
		var o opts
		_, err := newSet(&o, false).Parse(c.args)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error containing %q", c.args, err, c.want)
		}
		if o.out != "" {
			t.Errorf("%q: set the file name %q", c.args, o.out)
		}
	}
	for _, h := range []string{"-h", "-help", "--help"} {
		var o opts
		if _, err := newSet(&o, true).Parse([]string{"1", h}); !errors.Is(err, ErrHelp) {
			t.Errorf("%s: %v, want ErrHelp", h, err)
		}
	}
}

func TestNames(t *testing.T) {
	var o opts
	got := newSet(&o, false).Names()
	want := []string{"--json", "-json", "-b", "-H", "-o=file", "--output=file", "--pid=pid", "-p=pid", "-d=", "-h", "--help"}
	if !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("-o\x00--json\x00-bH\x00-d0.5\x00cmd")
	f.Fuzz(func(t *testing.T, words string) {
		var o opts
		args := strings.Split(words, "\x00")
		rest, err := newSet(&o, false).Parse(args)
		if err == nil && len(rest) > len(args) {
			t.Fatalf("more words back than given: %q from %q", rest, args)
		}
		// A file name that begins with - comes only from the same word as
		// its option (-o=-x, -o-x), never from the word after it.
		explicit := slices.ContainsFunc(args, func(a string) bool {
			return strings.Contains(a, "=") || strings.HasPrefix(a, "-o") && a[2:] == o.out
		})
		if err == nil && strings.HasPrefix(o.out, "-") && o.out != "-" && !explicit {
			t.Fatalf("took the option %q as a file name from %q", o.out, args)
		}
	})
}
