package top

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cputime/cputime/sampler"
)

// screen is the interactive view's state.
type screen struct {
	t        *terminal
	opts     options
	threads  bool
	sortBy   sortKey
	pid      int    // p: only this process (0: all)
	name     string // /: only names holding this
	help     bool
	prompt   string // the question being asked, "" if none
	input    []byte // the answer being typed
	answer   func(string) string
	message  string // a one-refresh note (a refused answer)
	procs    []row
	thr      []row
	shown    []row
	last     frame
	out      []byte
	refreshN int
}

// runInteractive draws the live view on the terminal until q, ^C, a
// signal, or -n refreshes.
func runInteractive(o options, stdin io.Reader, stdout, stderr io.Writer) int {
	in, ok1 := asFile(stdin)
	out, ok2 := asFile(stdout)
	var t *terminal
	err := fmt.Errorf("not a file")
	if ok1 && ok2 {
		t, err = openTerminal(in, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: the interactive view needs a terminal (%v); use -b for batch mode\n", programName, err)
		return 1
	}
	// Deferred calls run while a panic unwinds, so the terminal is
	// restored before the runtime prints it.
	defer t.restore()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, append(append([]os.Signal{}, resizeSignals...), termSignals...)...)
	defer signal.Stop(sigs)

	// Threads are always sampled, so that H switches at once, with %CPU.
	s, err := newSampler(o, true)
	if err != nil {
		t.restore()
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return 1
	}
	defer s.Close()
	keys := make(chan []byte, 16)
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				keys <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()

	sc := &screen{t: t, opts: o, threads: o.threads, sortBy: byCPU}
	mProc, mThr := newModel(), newModel()
	var mach machineReader
	var x sampler.Sample
	doRefresh := func() error {
		if err := s.RefreshInto(&x); err != nil {
			return err
		}
		sc.procs = mProc.build(&x, false, sc.procs[:0])
		sc.thr = mThr.build(&x, true, sc.thr[:0])
		sc.last = frame{at: x.Time, interval: x.Interval, first: x.First, machine: mach.read(&x), errs: len(x.Errors)}
		sc.refreshN++
		return nil
	}
	if err := doRefresh(); err != nil {
		t.restore()
		fmt.Fprintf(stderr, "%s: %v\n", programName, err)
		return 1
	}
	sc.draw()
	timer := time.NewTimer(o.delay)
	defer timer.Stop()
	// Where no signal tells of a resize (Windows), look at the size now
	// and then.
	var sizeTick <-chan time.Time
	if len(resizeSignals) == 0 {
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		sizeTick = tk.C
	}
	w, h := t.size()
	for {
		if o.n > 0 && sc.refreshN >= o.n {
			return 0
		}
		select {
		case <-timer.C:
			if err := doRefresh(); err != nil {
				t.restore()
				fmt.Fprintf(stderr, "%s: %v\n", programName, err)
				return 1
			}
			sc.message = ""
			timer.Reset(sc.opts.delay)
		case k, ok := <-keys:
			if !ok {
				return 0 // the terminal went away
			}
			switch sc.key(k) {
			case actQuit:
				return 0
			case actRefresh:
				if err := doRefresh(); err != nil {
					return 1
				}
				timer.Reset(sc.opts.delay)
			case actDelay:
				timer.Reset(sc.opts.delay)
			}
		case <-sizeTick:
			if nw, nh := t.size(); nw == w && nh == h {
				continue
			}
		case sig := <-sigs:
			if sig == os.Interrupt || sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				t.restore()
				if s, ok := sig.(syscall.Signal); ok {
					return 128 + int(s)
				}
				return 1
			}
			// A resize: redraw at the new size.
		}
		w, h = t.size()
		sc.draw()
	}
}

type action uint8

const (
	actNone action = iota
	actQuit
	actRefresh
	actDelay // the interval changed
)

// key handles a chunk of input.
func (sc *screen) key(b []byte) action {
	act := actNone
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == 0x1b && i+1 < len(b) && (b[i+1] == '[' || b[i+1] == 'O') {
			// An escape sequence (arrow keys, ...): skipped whole.
			i += 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
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
		case 'P':
			sc.sortBy = byCPU
		case 'T':
			sc.sortBy = byTime
		case ' ':
			act = actRefresh
		case '?', 'h':
			sc.help = true
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

  q       quit (also ^C)
  H       threads on/off (one row per thread, TID in the first column)
  P       sort by %CPU (then TIME+)
  T       sort by TIME+ (cumulative CPU time)
  space   refresh now
  d or s  change the interval
  p       show one process only (empty: all)
  /       show names containing a text (any case; empty: all)
  ?       this help

%CPU is the exact CPU time used over the interval divided by the interval
(100 % = one CPU); USR% and SYS% split it into user and kernel mode. TIME+
is the exact cumulative CPU time. EVENT marks tasks that appeared (new) or
exited since the last refresh, with their exit time or the bracket around
it (last seen alive / first seen gone); exited tasks show once.

Press any key to return.`

// draw writes the whole screen in one write.
func (sc *screen) draw() {
	width, height := sc.t.size()
	if runtime.GOOS == "windows" {
		// The Windows console, unless DISABLE_NEWLINE_AUTO_RETURN is
		// set, wraps as soon as the last column is written, where other
		// terminals wait for the next character: a full-width line
		// would scroll the screen.
		width--
	}
	b := append(sc.out[:0], home...)
	lines := 0
	// styled writes a line in a style (an escape sequence, or ""), cut at
	// the width in columns.
	styled := func(style string, s []byte) {
		if lines >= height {
			return
		}
		if lines > 0 {
			b = append(b, "\r\n"...)
		}
		b = append(b, style...)
		start := len(b)
		b = append(b, s...)
		b = cutFrom(b, start, width)
		if style != "" {
			b = append(b, plain...)
		}
		b = append(b, clearEOL...)
		lines++
	}
	line := func(s []byte) { styled("", s) }
	if sc.help {
		for l := range strings.SplitSeq(helpText, "\n") {
			line([]byte(l))
		}
		b = append(b, clearEOS...)
		sc.out = b
		sc.t.out.Write(b)
		return
	}
	rows := sc.procs
	if sc.threads {
		rows = sc.thr
	}
	sc.shown = filter(append(sc.shown[:0], rows...), sc.pid, sc.name)
	sortRows(sc.shown, sc.sortBy)
	f := sc.last
	f.threads, f.rows = sc.threads, sc.shown
	f.newN, f.exitedN, f.deniedN = counts(sc.shown)
	line(statusLine(&f, sc.sortBy))
	var info []byte
	switch {
	case sc.prompt != "":
		info = append(append([]byte(sc.prompt), sc.input...), '_')
	case sc.message != "":
		info = []byte(sc.message)
	default:
		info = append(info, "interval "...)
		info = strconv.AppendFloat(info, sc.opts.delay.Seconds(), 'f', -1, 64)
		info = append(info, 's')
		if sc.pid != 0 {
			info = append(info, "  pid "...)
			info = strconv.AppendInt(info, int64(sc.pid), 10)
		}
		if sc.name != "" {
			info = append(info, "  name ~ "...)
			info = appendName(info, strconv.Quote(sc.name))
		}
		info = append(info, "  (? for help)"...)
	}
	line(info)
	ew := eventWidth(sc.shown)
	hdr := appendHeader(nil, sc.threads, ew)
	for n := len(hdr); n < width; n++ {
		hdr = append(hdr, ' ')
	}
	styled(reverse, hdr)
	now := time.Now()
	var rb []byte
	for i := range sc.shown {
		if lines >= height {
			break
		}
		rb = formatRow(rb[:0], &sc.shown[i], ew, now)
		style := ""
		if sc.shown[i].ev != evNone {
			style = bold // new and exited tasks stand out
		}
		styled(style, rb)
	}
	b = append(b, clearEOS...)
	sc.out = b
	sc.t.out.Write(b)
}
