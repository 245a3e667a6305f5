package exporter

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/names"
)

// LabelValue is a task name or a cgroup path as a label value: valid
// UTF-8, with every byte of invalid UTF-8, every control character and
// every rune that is not printable (bidirectional overrides among them)
// shown as '?', the way ps shows untrusted names (internal/names, which
// the command's text outputs use too).
func LabelValue(name string) string { return names.Sanitize(name) }

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
