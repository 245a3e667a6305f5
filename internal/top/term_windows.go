package top

import (
	"os"
	"sync"

	"golang.org/x/sys/windows"
)

// terminal is the console in raw mode (no echo, no line editing, ^C as a
// key) with virtual terminal processing, so the same escape sequences
// draw the same screen as on Linux; restore puts the modes back.
type terminal struct {
	in, out         *os.File
	inMode, outMode uint32
	once            sync.Once
}

func openTerminal(in, out *os.File) (*terminal, error) {
	t := &terminal{in: in, out: out}
	hin, hout := windows.Handle(in.Fd()), windows.Handle(out.Fd())
	if err := windows.GetConsoleMode(hin, &t.inMode); err != nil {
		return nil, err
	}
	if err := windows.GetConsoleMode(hout, &t.outMode); err != nil {
		return nil, err
	}
	raw := t.inMode&^(windows.ENABLE_ECHO_INPUT|windows.ENABLE_LINE_INPUT|windows.ENABLE_PROCESSED_INPUT) | windows.ENABLE_VIRTUAL_TERMINAL_INPUT
	if err := windows.SetConsoleMode(hin, raw); err != nil {
		return nil, err
	}
	if err := windows.SetConsoleMode(hout, t.outMode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING|windows.ENABLE_PROCESSED_OUTPUT); err != nil {
		windows.SetConsoleMode(hin, t.inMode)
		return nil, err
	}
	out.WriteString(enterScreen)
	return t, nil
}

func (t *terminal) size() (width, height int) {
	var info windows.ConsoleScreenBufferInfo
	if err := windows.GetConsoleScreenBufferInfo(windows.Handle(t.out.Fd()), &info); err != nil {
		return 80, 24
	}
	return int(info.Window.Right-info.Window.Left) + 1, int(info.Window.Bottom-info.Window.Top) + 1
}

func (t *terminal) restore() {
	t.once.Do(func() {
		t.out.WriteString(leaveScreen)
		windows.SetConsoleMode(windows.Handle(t.in.Fd()), t.inMode)
		windows.SetConsoleMode(windows.Handle(t.out.Fd()), t.outMode)
	})
}

// The console sends no signal on a resize: the screen polls its size.
var resizeSignals []os.Signal

var termSignals = []os.Signal{os.Interrupt}
