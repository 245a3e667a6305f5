package top

// The escape sequences the screen uses (ECMA-48 and xterm's alternate
// screen), understood by every terminal emulator in use and by the Windows
// console with virtual terminal processing.
const (
	enterScreen = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J" // alternate screen, cursor hidden, cleared
	leaveScreen = "\x1b[?25h\x1b[?1049l"              // cursor shown, main screen back
	home        = "\x1b[H"
	clearEOL    = "\x1b[K"
	clearEOS    = "\x1b[J"
	reverse     = "\x1b[7m"
	bold        = "\x1b[1m"
	plain       = "\x1b[m"
)
