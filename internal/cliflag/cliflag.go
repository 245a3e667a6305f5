// Package cliflag parses the options of every command, cputime's and the
// exporter's, by one set of rules:
//
//   - an option is a word that begins with "-" (a number is not one: a
//     PID, for the command to refuse); "--" ends the options;
//   - long options take one dash or two (--json, -json); a value follows
//     as the next word or after "=" (--pid 42, --pid=42);
//   - one-letter options (-o, -d) also take their value attached (-d0.5),
//     and one-letter switches combine (-bH);
//   - a value given as the next word may not begin with "-": "-o --json"
//     is a forgotten file name far more often than a file named --json,
//     and taking it would create that file and swallow the option. Such a
//     value is given with "=" (-o=-x, --trace=--json);
//   - -h, -help and --help ask for the command's help (ErrHelp).
//
// A Set parses a command's words into the variables its options set, and
// knows their names, for help, suggestions and shell completion.
package cliflag

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cputime/cputime/internal/names"
	"github.com/cputime/cputime/internal/suggest"
)

// ErrHelp is returned by Parse when the words ask for the command's help.
var ErrHelp = errors.New("help requested")

// ErrUsage is matched (errors.Is) by every other error of Parse: the
// words are not what the command takes. Its text names the option and
// what is wrong, one sentence a command prints as it is.
var ErrUsage = errors.New("usage error")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// A Set is the options of one command.
type Set struct {
	opts []*option
	// Interspersed lets options follow the command's other words (wait
	// PID --json); otherwise the first word that is not an option ends
	// them, and it and every word after it are the command's (run CMD
	// ARG...).
	Interspersed bool
}

type option struct {
	names []string
	// what the value is, for "--pid needs a process id"; "" for a switch.
	what string
	// complete says what completes the value in a shell: "file", "pid",
	// or "" (nothing).
	complete string
	set      func(string) error
}

// Bool adds a switch that sets *p.
func (s *Set) Bool(p *bool, names ...string) {
	s.opts = append(s.opts, &option{names: names, set: func(string) error { *p = true; return nil }})
}

// Path adds an option whose value is a file name, stored in *p.
func (s *Set) Path(p *string, names ...string) {
	s.opts = append(s.opts, &option{names: names, what: "a file name", complete: "file", set: func(v string) error {
		*p = v
		return nil
	}})
}

// Func adds an option that takes a value (an empty one is refused), what it is (for the error when
// it is missing: "a process id"), and what completes it ("pid", "file" or
// ""); set stores it, or says why it is not one.
func (s *Set) Func(what, complete string, set func(string) error, names ...string) {
	s.opts = append(s.opts, &option{names: names, what: what, complete: complete, set: set})
}

// Names are the options' names, each as a shell completes it: a name
// that takes a value ends in "=" and what completes it ("-o=file",
// "--pid=pid", "--comm="), then -h and --help.
func (s *Set) Names() []string {
	var out []string
	for _, o := range s.opts {
		for _, n := range o.names {
			if o.what != "" {
				n += "=" + o.complete
			}
			out = append(out, n)
		}
	}
	return append(out, "-h", "--help")
}

// Parse sets the options in args and returns the other words, in order.
// Its error is ErrHelp, or one wrapping ErrUsage that names the option.
func (s *Set) Parse(args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(rest, args[i+1:]...), nil
		case !isOption(a):
			if !s.Interspersed {
				return append(rest, args[i:]...), nil
			}
			rest = append(rest, a)
			continue
		case a == "-h" || a == "-help" || a == "--help":
			return nil, ErrHelp
		}
		name, v, explicit := strings.Cut(a, "=")
		o := s.find(name)
		switch {
		case o == nil && !explicit && len(a) > 2 && a[1] != '-':
			// -d0.5, -bH: one letter and its value, or switches together.
			if err := s.short(a); err != nil {
				return nil, err
			}
			continue
		case o == nil:
			return nil, s.unknown(a)
		case o.what == "" && explicit:
			return nil, usagef("%s takes no value", name)
		case o.what == "":
		case explicit && v == "":
			return nil, usagef("%s needs %s", name, o.what)
		case !explicit:
			if i+1 >= len(args) {
				return nil, usagef("%s needs %s", name, o.what)
			}
			v = args[i+1]
			i++
			if strings.HasPrefix(v, "-") && v != "-" {
				return nil, usagef("%s needs %s, not the option %q (a value that begins with - is given as %s=%s)",
					name, o.what, names.Sanitize(v), name, names.Sanitize(v))
			}
		}
		if err := o.set(v); err != nil {
			return nil, usagef("%s %s: %v", name, quote(v), err)
		}
	}
	return rest, nil
}

// short parses a word of one-letter options: the first with its value
// attached, or switches together.
func (s *Set) short(a string) error {
	if o := s.find(a[:2]); o != nil && o.what != "" {
		if err := o.set(a[2:]); err != nil {
			return usagef("%s %s: %v", a[:2], quote(a[2:]), err)
		}
		return nil
	}
	var sets []*option
	for _, c := range a[1:] {
		o := s.find("-" + string(c))
		if o == nil || o.what != "" {
			return s.unknown(a)
		}
		sets = append(sets, o)
	}
	for _, o := range sets {
		o.set("")
	}
	return nil
}

func (s *Set) find(name string) *option {
	for _, o := range s.opts {
		for _, n := range o.names {
			if n == name {
				return o
			}
		}
	}
	return nil
}

func (s *Set) unknown(a string) error {
	name, _, _ := strings.Cut(a, "=")
	var all []string
	for _, o := range s.opts {
		all = append(all, o.names...)
	}
	return usagef("unknown option %s%s", names.Sanitize(a), suggest.DidYouMean(name, append(all, "-h", "--help")))
}

func quote(v string) string { return strconv.Quote(names.Sanitize(v)) }

// isOption reports whether a is an option rather than a value or an
// argument: a negative number is an argument (a PID, for the command to
// refuse clearly), and "-" alone is one (standard input, in some tools).
func isOption(a string) bool {
	if _, err := strconv.Atoi(a); err == nil {
		return false
	}
	return strings.HasPrefix(a, "-") && a != "-"
}
