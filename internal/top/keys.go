package top

import (
	"strconv"
	"strings"
	"time"
)

type action uint8

const (
	actNone action = iota
	actQuit
	actRefresh
	actDelay // the interval changed
)

// Keys that arrive as escape sequences, named after what they do.
type move uint8

const (
	mvNone move = iota
	mvUp
	mvDown
	mvPageUp
	mvPageDown
	mvHome
	mvEnd
)

// escapeKey decodes the escape sequence at the start of b (after ESC):
// the movement key it is, if any, and its length. xterm and tmux send
// arrows as CSI A-D or SS3 A-D, Home and End as CSI H/F, SS3 H/F, CSI 1~/4~
// or (rxvt) CSI 7~/8~, PgUp and PgDn as CSI 5~/6~.
func escapeKey(b []byte) (move, int) {
	if len(b) < 2 || b[0] != '[' && b[0] != 'O' {
		return mvNone, 0
	}
	i := 1
	for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) { // parameters, intermediates
		i++
	}
	if i == len(b) {
		return mvNone, len(b)
	}
	params, final := string(b[1:i]), b[i]
	n := i + 1
	switch {
	case final == 'A':
		return mvUp, n
	case final == 'B':
		return mvDown, n
	case final == 'H':
		return mvHome, n
	case final == 'F':
		return mvEnd, n
	case final == '~' && (params == "5"):
		return mvPageUp, n
	case final == '~' && (params == "6"):
		return mvPageDown, n
	case final == '~' && (params == "1" || params == "7"):
		return mvHome, n
	case final == '~' && (params == "4" || params == "8"):
		return mvEnd, n
	}
	return mvNone, n
}

// move moves the selection; draw keeps it on screen.
func (sc *screen) move(m move) {
	page := max(sc.page, 1)
	switch m {
	case mvUp:
		sc.sel--
	case mvDown:
		sc.sel++
	case mvPageUp:
		sc.sel -= page
		sc.first -= page
	case mvPageDown:
		sc.sel += page
		sc.first += page
	case mvHome:
		sc.sel, sc.first = 0, 0
	case mvEnd:
		sc.sel = len(sc.shown) - 1
		sc.first = sc.sel
	}
	sc.clamp()
}

// clamp keeps the selection among the rows and on screen, and the screen
// full where there are rows enough.
func (sc *screen) clamp() {
	n, page := len(sc.shown), max(sc.page, 1)
	sc.sel = max(0, min(sc.sel, n-1))
	if sc.sel < sc.first {
		sc.first = sc.sel
	}
	if sc.sel >= sc.first+page {
		sc.first = sc.sel - page + 1
	}
	sc.first = max(0, min(sc.first, n-page))
}

// key handles a chunk of input.
func (sc *screen) key(b []byte) action {
	act := actNone
	sc.message = "" // shown until the next key
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == 0x1b && i+1 < len(b) && (b[i+1] == '[' || b[i+1] == 'O') {
			m, n := escapeKey(b[i+1:])
			i += n
			if sc.prompt == "" && sc.confirm == nil && !sc.help {
				sc.move(m)
			}
			continue
		}
		if sc.confirm != nil {
			f := sc.confirm
			sc.confirm, sc.prompt = nil, ""
			sc.message = f(c == 'y' || c == 'Y')
			continue
		}
		if sc.prompt != "" {
			if a := sc.promptKey(c); a != actNone {
				act = a
			}
			continue
		}
		if sc.help {
			sc.help = false
			continue
		}
		switch c {
		case 'q', 3: // q, ^C
			return actQuit
		case 'H':
			sc.threads = !sc.threads
			sc.sel, sc.first = 0, 0
		case 'P':
			sc.sortBy = byCPU
		case 'T':
			sc.sortBy = byTime
		case 'M':
			sc.sortBy = byMem
		case 'N':
			sc.sortBy = byPID
		case 'R':
			sc.reversed = !sc.reversed
		case '1':
			sc.perCPU = !sc.perCPU
		case ' ':
			act = actRefresh
		case '?', 'h':
			sc.help = true
		case 'k':
			sc.askSignal()
		case 'f', 'L':
			sc.ask("Find name or PID (empty: the last one again): ", func(v string) string {
				if v != "" {
					sc.find = v
				}
				return sc.findNext(v != "")
			})
		case '&':
			sc.message = sc.findNext(false)
		case 'd', 's':
			sc.ask("Change delay from "+strconv.FormatFloat(sc.opts.delay.Seconds(), 'f', -1, 64)+" to: ", func(v string) string {
				d, err := strconv.ParseFloat(v, 64)
				if err != nil || d <= 0 || d > 1e6 {
					return "Invalid interval " + strconv.Quote(v)
				}
				sc.opts.delay = time.Duration(d * float64(time.Second))
				act = actDelay
				return ""
			})
		case 'p':
			sc.ask("PID to show (empty: all): ", func(v string) string {
				if v == "" {
					sc.pid = 0
					return ""
				}
				pid, err := strconv.ParseInt(v, 10, 32)
				if err != nil || pid <= 0 {
					return "Invalid PID " + strconv.Quote(v)
				}
				sc.pid = int(pid)
				return ""
			})
		case '/':
			sc.ask("Name filter (empty: none): ", func(v string) string {
				sc.name = v
				return ""
			})
		case 12: // ^L
			sc.t.out.WriteString("\x1b[2J")
		}
	}
	return act
}

// findNext selects the next row (after the selection, wrapping; from the
// selection itself when fresh) whose name holds sc.find (any case) or
// whose id (PID, or TID with threads shown) it is, and says what it found.
func (sc *screen) findNext(fresh bool) string {
	if sc.find == "" {
		return "Nothing to find: f asks what"
	}
	want := strings.ToLower(sc.find)
	id, _ := strconv.Atoi(sc.find)
	n := len(sc.shown)
	start := sc.sel + 1
	if fresh {
		start = sc.sel
	}
	for k := range n {
		i := (start + k) % n
		r := &sc.shown[i]
		if id > 0 && r.id() == id || strings.Contains(strings.ToLower(r.name), want) {
			sc.sel = i
			sc.clamp()
			return "Found " + strconv.Itoa(r.id()) + " " + string(appendName(nil, r.name)) + " (& for the next)"
		}
	}
	return "Not found: " + string(appendName(nil, strconv.Quote(sc.find)))
}

// askSignal asks which process to signal (the selected row's by default),
// which signal (TERM by default), then for a y to send it.
func (sc *screen) askSignal() {
	def := 0
	defName := ""
	if sc.sel >= 0 && sc.sel < len(sc.shown) && sc.shown[sc.sel].ev != evExited {
		def, defName = sc.shown[sc.sel].pid, sc.shown[sc.sel].name
	}
	q := "PID to signal: "
	if def > 0 {
		q = "PID to signal [" + strconv.Itoa(def) + "]: "
	}
	sc.ask(q, func(v string) string {
		pid, name := def, defName
		if v != "" {
			p, err := strconv.ParseInt(v, 10, 32)
			if err != nil || p <= 0 {
				return "Invalid PID " + strconv.Quote(v)
			}
			pid, name = int(p), ""
			for i := range sc.shown {
				if sc.shown[i].pid == pid {
					name = sc.shown[i].name
					break
				}
			}
		}
		if pid <= 0 {
			return "No PID: nothing sent"
		}
		who := strconv.Itoa(pid)
		if name != "" {
			who += " " + string(appendName(nil, name))
		}
		sc.ask("Send pid "+who+" signal [TERM]: ", func(v string) string {
			sig, ok := parseSignal(v)
			if !ok {
				return "Unknown signal " + strconv.Quote(v) + ": nothing sent"
			}
			sc.prompt = "Send " + sig.String() + " to " + who + "? [y/N] "
			sc.confirm = func(yes bool) string {
				if !yes {
					return "Not sent"
				}
				if err := sendSignal(pid, sig); err != nil {
					return "Failed to send " + sig.String() + " to " + who + ": " + err.Error()
				}
				return "Sent " + sig.String() + " to " + who
			}
			return ""
		})
		return ""
	})
}

func (sc *screen) ask(prompt string, answer func(string) string) {
	sc.prompt, sc.input, sc.answer = prompt, sc.input[:0], answer
}

func (sc *screen) promptKey(c byte) action {
	switch c {
	case '\r', '\n':
		sc.prompt = ""
		sc.message = sc.answer(string(sc.input))
		return actNone
	case 0x1b, 3, 7: // Esc, ^C, ^G: cancel
		sc.prompt = ""
	case 0x7f, 8: // backspace
		if len(sc.input) > 0 {
			sc.input = sc.input[:len(sc.input)-1]
		}
	default:
		if c >= 0x20 && c < 0x7f && len(sc.input) < 64 {
			sc.input = append(sc.input, c)
		}
	}
	return actNone
}

const helpText = `cputime top: keys

  q        quit (also ^C)
  Up Down  select the row above or below; the screen scrolls with it
  PgUp PgDn  a screen up or down;  Home End  the first or last row
  H        threads on/off (one row per thread, TID in the first column)
  P M T N  sort by %CPU, RES (memory), TIME+, PID (highest first)
  R        reverse the sort (lowest first)
  1        a line per CPU on/off
  f or L   find a name or PID (selects it);  &  find the next
  k        send a signal to a process (the selected one by default;
           asks which signal, TERM by default, then y to send)
  space    refresh now
  d or s   change the interval
  p        show one process only (empty: all)
  /        show names containing a text (any case; empty: all)
  ?        this help

%CPU is the exact CPU time used over the interval divided by the interval
(100 % = one CPU); USR% and SYS% split it into user and kernel mode. RES
is the process's resident memory. TIME+ is the exact cumulative CPU time.
EVENT marks tasks that appeared (new) or exited since the last refresh:
exit@TIME when the exit instant is known, gone@TIME when it exited
between the last refresh that saw it and TIME; exited tasks show once.

Press any key to return.`
