package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal says whether w is a terminal: a file whose termios reads.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
