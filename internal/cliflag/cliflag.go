// Package cliflag holds the rules of the commands' options that every
// command shares, cputime's and the exporter's.
package cliflag

import (
	"fmt"
	"strings"
)

// Path checks value, given to the path option opt as the next
// argument (not as opt=value): one that begins with "-" is refused, since
// "-o --json" is a forgotten file name far more often than a file named
// --json, and taking it would create that file and swallow the option.
// Every command's path options use it (serve's --web.config.file too).
func Path(opt, value string) error {
	if strings.HasPrefix(value, "-") {
		return fmt.Errorf("%s needs a file name, not the option %q (a file name that begins with - is given as %s=%s)", opt, value, opt, value)
	}
	return nil
}
