package exporter

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cputime/cputime"
)

// LabelValue is a task name as a label value: valid UTF-8, with control
// characters and bidirectional overrides shown as '?', the way ps shows
// untrusted names.
func LabelValue(name string) string {
	clean := true
	for _, r := range name {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			b.WriteByte('?')
		} else {
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// forksFrom reads the "processes" line of a /proc/stat file: the tasks
// (processes and threads) created since boot.
func forksFrom(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "processes "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s: processes %q: %w", path, strings.TrimSpace(v), cputime.ErrInvalidData)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("parsing %s: no processes line: %w", path, cputime.ErrInvalidData)
}
