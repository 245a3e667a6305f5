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
	reversed bool   // R: lowest first
	perCPU   bool   // 1: a line per CPU
	pid      int    // p: only this process (0: all)
	name     string // /: only names holding this
	help     bool
	prompt   string // the question being asked, "" if none
	input    []byte // the answer being typed
	answer   func(string) string
	confirm  func(yes bool) string // a y/n question: the next key answers
	message  string                // a note until the next key (a refused answer, what k did)
	find     string                // f: the last text looked for
	sel      int                   // the selected row, an index into shown
	first    int                   // the first row on screen
	page     int                   // rows on screen at the last draw
	procs    []row
	thr      []row
	shown    []row
	last     frame
	out      []byte
	refreshN int
}

// runInteractive draws the live view on the terminal until q, ^C, a
// signal, or -n refreshes.
func runInteractive(o options, stdin io.Reader, stdout, stderr io.Writer) (status int) {
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
	// Named processes that do not exist are said once the terminal is
	// restored (this runs after the restore below), and make the status 1.
	var missing []int
	defer func() {
		if len(missing) > 0 {
			reportMissing(stderr, missing)
			if status == 0 {
				status = 1
			}
		}
	}()
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
	missing = missingPIDs(o.pids, &x)
	if len(missing) > 0 && noneLeft(o.pids, missing) {
		return 1 // nothing to watch
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

// wrapStatus lays the status line's parts (separated by two spaces) out
// on lines of at most width columns, so that a narrow terminal shows all
// of it rather than its start.
func wrapStatus(status []byte, width int) [][]byte {
	var lines [][]byte
	var cur []byte
	for part := range strings.SplitSeq(string(status), "  ") {
		if len(cur) > 0 && width > 0 && len(cur)+2+len(part) > width {
			lines = append(lines, cur)
			cur = nil
		}
		if len(cur) > 0 {
			cur = append(cur, "  "...)
		}
		cur = append(cur, part...)
	}
	return append(lines, cur)
}

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
	sortRows(sc.shown, sc.sortBy, sc.reversed)
	f := sc.last
	f.threads, f.rows = sc.threads, sc.shown
	f.newN, f.exitedN, f.deniedN = counts(sc.shown)
	for _, l := range wrapStatus(statusLine(&f, sc.sortBy), width) {
		line(l)
	}
	if sc.perCPU {
		switch {
		case !f.machine.perKnown && f.first:
			line([]byte("per-CPU use: from the second refresh"))
		case !f.machine.perKnown:
			line([]byte("per-CPU use: not known on this system"))
		}
		var cb []byte
		for _, u := range f.machine.per {
			cb = appendCPULine(cb[:0], u)
			line(cb)
		}
	}
	// The rows that fit under the info line and the header.
	sc.page = max(1, height-lines-2)
	sc.clamp()
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
		info = append(info, "  row "...)
		info = strconv.AppendInt(info, int64(min(sc.sel+1, len(sc.shown))), 10)
		info = append(info, " of "...)
		info = strconv.AppendInt(info, int64(len(sc.shown)), 10)
		info = append(info, "  (? for help)"...)
	}
	line(info)
	ew := eventWidth(sc.shown)
	// Below 100 columns USR%, SYS% and CREATED's milliseconds give their
	// place to NAME.
	wide := width >= 100
	hdr := appendHeader(nil, sc.threads, ew, wide)
	for n := len(hdr); n < width; n++ {
		hdr = append(hdr, ' ')
	}
	styled(reverse, hdr)
	now := time.Now()
	var rb []byte
	for i := sc.first; i < len(sc.shown); i++ {
		if lines >= height {
			break
		}
		rb = formatRow(rb[:0], &sc.shown[i], ew, wide, now)
		style := ""
		if sc.shown[i].ev != evNone {
			style = bold // new and exited tasks stand out
		}
		if i == sc.sel {
			style += reverse
		}
		styled(style, rb)
	}
	b = append(b, clearEOS...)
	sc.out = b
	sc.t.out.Write(b)
}
