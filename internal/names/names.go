// Package names makes task names safe to show, the way ps prints them. A
// task chooses its own name (prctl PR_SET_NAME, or the file it executes),
// so a name could otherwise move the cursor, clear the screen, start an
// escape sequence (ESC, or the one-byte CSI U+009B), break a line, or
// reverse the text around it (bidi overrides and isolates). Every text
// output of the command, top and the timeline prints names through it;
// JSON keeps the exact name, which encoding/json escapes.
package names

import (
	"unicode"
	"unicode/utf8"
)

// Append appends name to b with every byte of invalid UTF-8 (a raw 0x9b
// among them), every C0 and C1 control, DEL, and every rune that is not
// printable (format characters such as U+202E and U+2066–U+2069,
// zero-width joiners, line and paragraph separators, spaces other than
// U+0020) replaced by one '?'. It allocates only to grow b.
func Append(b []byte, name string) []byte {
	for i := 0; i < len(name); {
		if c := name[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		if (r == utf8.RuneError && size <= 1) || !unicode.IsPrint(r) {
			b = append(b, '?')
		} else {
			b = append(b, name[i:i+size]...)
		}
		i += max(size, 1)
	}
	return b
}

// Sanitize returns name as Append writes it; a name of printable ASCII is
// returned as it is, without allocating.
func Sanitize(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f {
			return string(Append(make([]byte, 0, len(name)), name))
		}
	}
	return name
}
