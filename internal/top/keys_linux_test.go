package top_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rowInfo reads "row N of M" from the info line.
func rowInfo(s screenView) (n, of int) {
	fmt.Sscanf(s.info[strings.Index(s.info, "row "):], "row %d of %d", &n, &of)
	return n, of
}

func hasRowInfo(s screenView) bool { return strings.Contains(s.info, "row ") && len(s.rows) > 0 }

// tids lists the threads of process pid from /proc, highest first.
func tids(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		id, _ := strconv.Atoi(e.Name())
		out = append(out, id)
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// startChildInOrder starts a workload (mode as startChild's) and reads
// its first line, and does so again while the pid space wrapped inside it:
// the tests of the order by id take the main thread, whose id is the PID,
// for the lowest, and a thread created after the wrap has a lower one
// (pid_max is 32,768 on many systems, and a full test run goes round it).
func startChildInOrder(t *testing.T, mode string) *child {
	t.Helper()
	for try := 1; ; try++ {
		c := startChild(t, mode)
		c.line(t)
		all := tids(t, c.pid)
		if all[len(all)-1] == c.pid {
			return c
		}
		if try == 3 {
			t.Fatalf("3 workloads in a row had a thread id below their pid: %v", all)
		}
		t.Logf("the pid space wrapped inside workload %d (its lowest thread id %d): another", c.pid, all[len(all)-1])
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
}

func ids(s screenView, col string) []int {
	var out []int
	for _, r := range s.rows {
		id, _ := strconv.Atoi(r[col])
		out = append(out, id)
	}
	return out
}

// TestKeysScroll: with more threads than rows, the arrows, PgUp/PgDn and
// Home/End move the selection and scroll the rows; under N (sort by id,
// highest first) the first row is the highest thread id /proc lists and
// the last the main thread, whose id is the PID.
func TestKeysScroll(t *testing.T) {
	c := startChildInOrder(t, "idle 60")
	p := newTmux(t, 120, 20, topCommand(fmt.Sprintf("-d 0.5 -H -p %d", c.pid)))
	p.waitFor("threads", func(s screenView) bool { return len(s.cols) > 0 && s.cols[0] == "TID" && hasRowInfo(s) })
	p.keys("N")
	s := p.waitFor("sort by PID", func(s screenView) bool { return strings.Contains(s.status, "sort PID") && hasRowInfo(s) })
	page := len(s.rows)
	if page != 20-4 { // status, info, header, and the status line is one line at 120 columns
		t.Errorf("%d rows on a 20-line screen, want 16:\n%s", page, s.text)
	}
	all := tids(t, c.pid)
	if got := ids(s, "TID"); got[0] != all[0] || !slices.IsSortedFunc(got, func(a, b int) int { return b - a }) {
		t.Errorf("sorted by TID: rows %v, /proc's highest %d:\n%s", got, all[0], s.text)
	}
	if n, of := rowInfo(s); n != 1 || of < len(all)-2 || of > len(all)+2 {
		t.Errorf("row %d of %d, /proc lists %d threads", n, of, len(all))
	}

	p.keys("Down", "Down", "Down")
	p.waitFor("row 4", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == 4 })
	p.keys("Up")
	s = p.waitFor("row 3", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == 3 })
	top0 := ids(s, "TID")[0]

	p.keys("PPage") // at the top already: stays
	p.waitFor("row 1", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == 1 })
	p.keys("NPage")
	s = p.waitFor("a page down", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == 1+page })
	if got := ids(s, "TID"); got[0] >= top0 || !slices.IsSortedFunc(got, func(a, b int) int { return b - a }) {
		t.Errorf("after PgDn the first row is %d (was %d): %v", got[0], top0, got)
	}

	p.keys("End")
	s = p.waitFor("the last row", func(s screenView) bool { n, of := rowInfo(s); return hasRowInfo(s) && n == of })
	if got := ids(s, "TID"); got[len(got)-1] != c.pid || len(got) != page {
		t.Errorf("End: rows %v, want a full screen ending with the main thread %d:\n%s", got, c.pid, s.text)
	}
	_, of := rowInfo(s)
	p.keys("PPage")
	p.waitFor("a page up", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == of-page })

	p.keys("Home")
	s = p.waitFor("the first row", func(s screenView) bool { n, _ := rowInfo(s); return hasRowInfo(s) && n == 1 })
	if got, all := ids(s, "TID"), tids(t, c.pid); got[0] != all[0] {
		t.Errorf("Home: first row %d, /proc's highest thread id %d", got[0], all[0])
	}

	// R: lowest first; the main thread leads.
	p.keys("R")
	s = p.waitFor("reversed", func(s screenView) bool { return len(s.rows) > 0 && s.rows[0]["TID"] == strconv.Itoa(c.pid) })
	if !slices.IsSorted(ids(s, "TID")) {
		t.Errorf("R: not ascending:\n%s", s.text)
	}
}

// statm returns process pid's resident memory in bytes, from /proc.
func statm(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// resBytes reads a RES cell: 812K, 12.3M, 1.25G.
func resBytes(v string) float64 {
	if v == "-" || v == "" {
		return -1
	}
	mult := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[v[len(v)-1]]
	f, _ := strconv.ParseFloat(v[:len(v)-1], 64)
	return f * mult
}

// TestKeysSort: M sorts by RES, which agrees with /proc/PID/statm; T by
// TIME+; N by PID; P by %CPU; the status line names the order.
func TestKeysSort(t *testing.T) {
	c := startChild(t, "idle 2")
	c.line(t)
	p := newTmux(t, 160, 50, topCommand("-d 0.5"))
	p.waitFor("the view", func(s screenView) bool { return len(s.rows) > 3 })
	p.keys("M")
	s := p.waitFor("sort by RES", func(s screenView) bool { return strings.Contains(s.status, "sort RES") && len(s.rows) > 3 })
	checkSorted(t, s, "RES", resBytes)
	// The workload is ours: its RES is /proc's, to the rounding of the
	// column and what it allocates meanwhile.
	p.keys("/")
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.pid))
	p.keys("-l", strings.TrimSpace(string(comm)))
	p.keys("Enter")
	s = p.waitFor("the workload's row", func(s screenView) bool { _, ok := s.row("PID", strconv.Itoa(c.pid)); return ok })
	r, _ := s.row("PID", strconv.Itoa(c.pid))
	if got, want := resBytes(r["RES"]), float64(statm(t, c.pid)); got < 0.9*want-(1<<20) || got > 1.1*want+(1<<20) {
		t.Errorf("RES %s (%.0f bytes), /proc/%d/statm says %.0f", r["RES"], got, c.pid, want)
	}
	p.keys("/", "Enter")
	p.keys("T")
	s = p.waitFor("sort by TIME+", func(s screenView) bool { return strings.Contains(s.status, "sort TIME+") && len(s.rows) > 3 })
	checkSorted(t, s, "TIME+", cpuTime)
	p.keys("N")
	s = p.waitFor("sort by PID", func(s screenView) bool { return strings.Contains(s.status, "sort PID") && len(s.rows) > 3 })
	checkSorted(t, s, "PID", func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f })
	p.keys("P")
	s = p.waitFor("sort by %CPU", func(s screenView) bool { return strings.Contains(s.status, "sort %CPU") && len(s.rows) > 3 })
	checkSorted(t, s, "%CPU", func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f })
}

// TestKeyPerCPU: 1 shows a line per CPU, as many as /proc/stat has cpuN
// lines, each a share between 0 and 100 %; 1 again hides them.
func TestKeyPerCPU(t *testing.T) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	cpus := len(regexp.MustCompile(`(?m)^cpu\d+ `).FindAll(b, -1))
	line := regexp.MustCompile(`(?m)^cpu (\d+) +([\d.]+)% \(user [\d.]+%, system [\d.]+%\)`)
	p := newTmux(t, 120, 40, topCommand("-d 0.3 -p 1"))
	p.waitFor("the second refresh", func(s screenView) bool { return len(s.cols) > 0 && !strings.Contains(s.status, "interval -") })
	p.keys("1")
	s := p.waitFor("the CPU lines", func(s screenView) bool { return len(line.FindAllString(s.text, -1)) > 0 })
	got := line.FindAllStringSubmatch(s.text, -1)
	if len(got) != cpus {
		t.Errorf("%d CPU lines, /proc/stat has %d CPUs:\n%s", len(got), cpus, s.text)
	}
	for _, m := range got {
		if v, _ := strconv.ParseFloat(m[2], 64); v < 0 || v > 100.05 {
			t.Errorf("CPU %s at %v %%", m[1], v)
		}
	}
	p.keys("1")
	p.waitFor("the CPU lines gone", func(s screenView) bool { return len(s.cols) > 0 && !line.MatchString(s.text) })
}

// TestKeyKill: k asks for the PID (the selected row's by default) and the
// signal (TERM by default), then for a y: n sends nothing, y sends it,
// and the child dies of SIGTERM (its wait status says so).
func TestKeyKill(t *testing.T) {
	c := startChild(t, "idle 1")
	c.line(t)
	pid := strconv.Itoa(c.pid)
	p := newTmux(t, 160, 20, topCommand("-d 0.5 -p "+pid))
	p.waitFor("the child's row", func(s screenView) bool { _, ok := s.row("PID", pid); return ok })
	p.keys("k")
	p.waitFor("the PID question", func(s screenView) bool { return strings.Contains(s.info, "PID to signal ["+pid+"]") })
	p.keys("Enter")
	p.waitFor("the signal question", func(s screenView) bool {
		return strings.Contains(s.info, "Send pid "+pid) && strings.Contains(s.info, "[TERM]")
	})
	p.keys("Enter")
	p.waitFor("the confirmation", func(s screenView) bool {
		return strings.Contains(s.info, "Send SIGTERM (15) to "+pid) && strings.Contains(s.info, "[y/N]")
	})
	p.keys("n")
	p.waitFor("not sent", func(s screenView) bool { return strings.Contains(s.info, "Not sent") })
	if err := syscall.Kill(c.pid, 0); err != nil {
		t.Fatalf("the child is gone after n: %v", err)
	}
	// A bad signal name sends nothing either.
	p.keys("k", "Enter")
	p.keys("-l", "NOSUCH")
	p.keys("Enter")
	p.waitFor("refused", func(s screenView) bool { return strings.Contains(s.info, `Unknown signal "NOSUCH"`) })

	p.keys("k", "Enter", "Enter", "y")
	p.waitFor("sent", func(s screenView) bool { return strings.Contains(s.info, "Sent SIGTERM (15) to "+pid) })
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit after SIGTERM")
	}
	ws := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("the child ended with %v, want SIGTERM", c.cmd.ProcessState)
	}
}

// TestKeyFind: f selects the row of a PID or a name; & finds the next;
// a name nobody has is "Not found".
func TestKeyFind(t *testing.T) {
	c := startChildInOrder(t, "idle 40")
	p := newTmux(t, 160, 20, topCommand(fmt.Sprintf("-d 0.5 -H -p %d", c.pid)))
	p.waitFor("threads", func(s screenView) bool { return len(s.cols) > 0 && s.cols[0] == "TID" && hasRowInfo(s) })
	p.keys("N") // highest id first: the main thread is the last row
	p.waitFor("sort by PID", func(s screenView) bool { return strings.Contains(s.status, "sort PID") && hasRowInfo(s) })
	p.keys("f")
	p.waitFor("the question", func(s screenView) bool { return strings.Contains(s.info, "Find name or PID") })
	p.keys("-l", strconv.Itoa(c.pid))
	p.keys("Enter")
	s := p.waitFor("found", func(s screenView) bool { return strings.Contains(s.info, "Found "+strconv.Itoa(c.pid)) })
	if got := ids(s, "TID"); got[len(got)-1] != c.pid {
		t.Errorf("the found main thread is not on screen at the end: %v", got)
	}
	p.keys("&") // the next with the same text: none but itself, wraps
	p.waitFor("found again", func(s screenView) bool { return strings.Contains(s.info, "Found "+strconv.Itoa(c.pid)) })
	p.keys("f")
	p.keys("-l", "no-such-task-name")
	p.keys("Enter")
	p.waitFor("not found", func(s screenView) bool { return strings.Contains(s.info, `Not found: "no-such-task-name"`) })
	// A name: every thread has the workload's; f starts at the selection
	// (the main thread, the last row), which matches; & wraps to row 1.
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.pid))
	p.keys("f")
	p.keys("-l", strings.TrimSpace(string(comm))[:4])
	p.keys("Enter")
	s = p.waitFor("found by name", func(s screenView) bool { return strings.Contains(s.info, "Found "+strconv.Itoa(c.pid)) })
	p.keys("&")
	s = p.waitFor("the next by name", func(s screenView) bool {
		return strings.Contains(s.info, "Found ") && !strings.Contains(s.info, "Found "+strconv.Itoa(c.pid))
	})
	p.keys("Left") // a key that does nothing: the info line shows the row again
	s = p.waitFor("row 1", func(s screenView) bool { return hasRowInfo(s) })
	if n, _ := rowInfo(s); n != 1 {
		t.Errorf("find by name from the last row: row %d, want 1 (wrapped)", n)
	}
}

// TestNarrow: at 80 columns every line fits, the status line is whole
// (wrapped, ending with the sort), and the header and its columns stay
// put from one refresh to the next, exits or not.
func TestNarrow(t *testing.T) {
	p := newTmux(t, 80, 24, topCommand("-d 0.3"))
	s := p.waitFor("the second refresh", func(s screenView) bool {
		return len(s.rows) > 0 && !strings.Contains(s.status, "interval -")
	})
	for _, l := range strings.Split(s.text, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d columns at 80: %q", n, l)
		}
	}
	for _, part := range []string{"cputime top - ", "interval ", "tasks ", "cpu ", "sort %CPU"} {
		if !strings.Contains(s.status, part) {
			t.Errorf("status line lacks %q:\n%s", part, s.text)
		}
	}
	if !strings.HasSuffix(strings.TrimRight(s.header, " "), "NAME") {
		t.Errorf("header cut: %q", s.header)
	}
	// A Linux task name (comm, at most 15 bytes) fits whole.
	if at := strings.Index(s.header, "NAME"); at < 0 || at+15 > 80 {
		t.Errorf("NAME starts at column %d of 80: names are cut:\n%s", at, s.text)
	}
	first := s.header
	n := 0
	p.waitFor("three more refreshes", func(s screenView) bool {
		if s.header != "" && s.header != first {
			t.Fatalf("the header moved:\n%q\n%q", first, s.header)
		}
		if s.status != "" && s.status != first {
			n++
		}
		return n >= 3
	})
}
