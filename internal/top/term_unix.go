//go:build linux

package top

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminal is the controlling terminal in raw mode on the alternate
// screen; restore puts it back as it was.
type terminal struct {
	in, out *os.File
	saved   unix.Termios
	once    sync.Once
}

// openTerminal switches in to raw mode (no echo, no line editing, no
// signals from keys: ^C arrives as a key) and out to the alternate screen
// with the cursor hidden. It fails if either is not a terminal.
func openTerminal(in, out *os.File) (*terminal, error) {
	saved, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS)
	if err != nil {
		return nil, err
	}
	if _, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err != nil {
		return nil, err
	}
	raw := *saved
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	t := &terminal{in: in, out: out, saved: *saved}
	out.WriteString(enterScreen)
	return t, nil
}

func (t *terminal) size() (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 80, 24
	}
	return int(ws.Col), int(ws.Row)
}

// restore leaves the alternate screen, shows the cursor and puts the
// terminal modes back; only the first call does anything.
func (t *terminal) restore() {
	t.once.Do(func() {
		t.out.WriteString(leaveScreen)
		unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, &t.saved)
	})
}

// resizeSignals are the signals that say the window changed size.
var resizeSignals = []os.Signal{syscall.SIGWINCH}

var termSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
