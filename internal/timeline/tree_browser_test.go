package timeline

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real tree (150 processes, 600 threads, like "run --timeline" of a go
// build) in headless Chromium: the page's script starts with every
// process collapsed to its header row and summary lane, opens a process
// on a click, finds by id and name, and draws the tree's CPU lane; the
// lanes it computes agree with the Go model's, pixel by pixel.

var (
	processRow = color.RGBA{0xea, 0xee, 0xf2, 0xff}
	laneFill   = color.RGBA{0x4a, 0x98, 0xc9, 0xff}
	laneBack   = color.RGBA{0xf6, 0xf8, 0xfa, 0xff}
)

// over is c drawn at opacity a over bg.
func over(c, bg color.RGBA, a float64) color.RGBA {
	m := func(x, y uint8) uint8 { return uint8(math.Round(a*float64(x) + (1-a)*float64(y))) }
	return color.RGBA{m(c.R, bg.R), m(c.G, bg.G), m(c.B, bg.B), 0xff}
}

type treePage struct {
	r    *Recording
	L    *Layout
	pl   *plan
	lz   *laneSet
	html string
}

func newTreePage(t *testing.T) *treePage {
	t.Helper()
	r := buildTree(150, 600)
	pl, err := prepare(r)
	if err != nil {
		t.Fatal(err)
	}
	L := layoutPlan(pl, Options{})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range r.Processes {
		n += len(p.Threads)
	}
	if len(r.Processes) != 150 || n < 600 {
		t.Fatalf("fixture has %d processes, %d threads", len(r.Processes), n)
	}
	return &treePage{r: r, L: L, pl: pl, lz: computeLanes(pl, L), html: buf.String()}
}

// write writes the page with script appended to its body, and returns its
// file URL with hash.
func (tp *treePage) write(t *testing.T, script, hash string) string {
	t.Helper()
	html := tp.html
	if script != "" {
		html = strings.Replace(html, "</body>", "<script>\n"+script+"\n</script>\n</body>", 1)
	}
	page := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + page + hash
}

// dumpDOM returns the DOM after the page's scripts ran (Chromium's
// --dump-dom): what a script did, readable as text.
func dumpDOM(t *testing.T, browser, url string) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--disable-extensions", "--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", url)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", browser, err, errb.String())
	}
	return out.String()
}

// collapsedY is where process k's header row is when every process is
// collapsed but those in open (by index).
func (tp *treePage) collapsedY(k int, open map[int]bool) float64 {
	y := float64(HeaderHeight)
	for i := 0; i < k; i++ {
		y += float64(tp.L.ProcessRowHeight)
		if open[i] {
			y += tp.threadsHeight(i)
		}
	}
	return y
}

func (tp *treePage) threadsHeight(k int) float64 {
	pb := tp.L.Processes[k]
	h := 0.0
	for _, tb := range tp.L.Threads {
		if tb.Process == pb.Process {
			h += tb.RowY1 - tb.RowY0
		}
	}
	return h
}

func TestBrowserTree(t *testing.T) {
	browser := findChromium(t)
	tp := newTreePage(t)
	procH := float64(tp.L.ProcessRowHeight)

	t.Run("collapsed", func(t *testing.T) {
		t.Parallel()
		h := HeaderHeight + int(procH)*len(tp.L.Processes) + 40
		img := screenshotURL(t, browser, tp.write(t, "", ""), tp.L.Width, h)
		tp.checkCollapsed(t, img, nil)
		tp.checkTreeLane(t, img)
	})
	t.Run("click", func(t *testing.T) {
		t.Parallel()
		// A click on process 3's header row opens it, another on
		// process 7's opens that one: their threads are drawn under them,
		// the other processes move down.
		script := `document.querySelector("#p3 .ph .hit").dispatchEvent(new MouseEvent("click", {bubbles: true}));
document.querySelector("#p7 .ph .hit").dispatchEvent(new MouseEvent("click", {bubbles: true}));`
		open := map[int]bool{3: true, 7: true}
		h := HeaderHeight + int(procH)*len(tp.L.Processes) + int(tp.threadsHeight(3)+tp.threadsHeight(7)) + 40
		img := screenshotURL(t, browser, tp.write(t, script, ""), tp.L.Width, h)
		tp.checkCollapsed(t, img, open)
		for _, k := range []int{3, 7} {
			pb := tp.L.Processes[k]
			shift := tp.collapsedY(k, open) - pb.Y0
			n := 0
			for _, tb := range tp.L.Threads {
				if tb.Process != pb.Process {
					continue
				}
				n++
				x, y := math.Floor((tb.X0+tb.X1)/2)+0.5, tb.Y0+shift+(tb.Y1-tb.Y0)*0.3
				if got := rgb(img.At(int(x), int(y))); dist(got, tb.Fill) > 8 {
					t.Errorf("process %d opened: thread bar pixel (%d,%d) is %v, want %v", k, int(x), int(y), got, tb.Fill)
				}
			}
			if n == 0 {
				t.Errorf("process %d has no thread to show", k)
			}
		}
	})
	t.Run("find-pid", func(t *testing.T) {
		t.Parallel()
		// One process by its id: it alone, at the top, with its lifetime
		// line where the geometry puts it.
		k := 40
		pb := tp.L.Processes[k]
		img := screenshotURL(t, browser, tp.write(t, "", "#q="+strconv.Itoa(tp.r.Processes[pb.Process].ID)), tp.L.Width, HeaderHeight+int(procH)*3)
		y := float64(HeaderHeight)
		if got := rgb(img.At(13, int(y+procH/2))); dist(got, processRow) > 6 {
			t.Errorf("no process row at the top: %v", got)
		}
		if got := rgb(img.At(13, int(y+procH+4))); dist(got, color.RGBA{255, 255, 255, 255}) > 6 {
			t.Errorf("a second row under the one found: %v", got)
		}
		mid := (pb.X0 + pb.X1) / 2
		if got := rgb(img.At(int(mid), int(y+procH/2))); int(got.R)+int(got.G)+int(got.B) > 3*0x70 {
			t.Errorf("process %d's lifetime line is not at x %.0f: %v", pb.Process, mid, got)
		}
	})
	t.Run("script", func(t *testing.T) {
		t.Parallel()
		tp.checkScript(t, browser)
	})
	t.Run("one-process", func(t *testing.T) {
		t.Parallel()
		// One process has nothing to collapse to: it starts open; a click
		// closes it, another opens it again; "collapse all" closes it.
		r := sampleRecording()
		r.Processes = r.Processes[:1]
		var buf bytes.Buffer
		if err := WriteHTML(&buf, r); err != nil {
			t.Fatal(err)
		}
		one := &treePage{html: buf.String()}
		script := `var out = [];
function shown() { return document.querySelector("#p0 .ths").style.display !== "none"; }
function click() { document.querySelector("#p0 .ph .hit").dispatchEvent(new MouseEvent("click", {bubbles: true})); }
out.push(shown()); click(); out.push(shown()); click(); out.push(shown());
document.getElementById("closeall").click(); out.push(shown());
document.body.setAttribute("data-out", JSON.stringify(out));`
		dom := dumpDOM(t, browser, one.write(t, script, ""))
		if !strings.Contains(dom, `data-out="[true,false,true,false]"`) {
			m := regexp.MustCompile(`data-out="[^"]*"`).FindString(dom)
			t.Errorf("one process: open at the start, after a click, another, collapse all = %s, want [true,false,true,false]", m)
		}
	})
}

// checkCollapsed checks that the processes are header rows one under the
// other (with the threads of those in open under them), each with its
// summary lane where the Go model puts it.
func (tp *treePage) checkCollapsed(t *testing.T, img image.Image, open map[int]bool) {
	t.Helper()
	procH := float64(tp.L.ProcessRowHeight)
	bad := 0
	fail := func(format string, a ...any) {
		t.Helper()
		if bad++; bad <= 15 {
			t.Errorf(format, a...)
		}
	}
	for k, pb := range tp.L.Processes {
		y0 := tp.collapsedY(k, open)
		if got := rgb(img.At(13, int(y0+procH/2))); dist(got, processRow) > 6 {
			fail("process %d: no header row at y %.0f (pixel %v)", k, y0+procH/2, got)
			continue
		}
		// The lane at its highest bucket, 2 px above its base line (the
		// lifetime line runs through the middle of the row).
		lane := tp.lz.procs[pb.plan]
		best := 0
		for i, v := range lane {
			if v > lane[best] {
				best = i
			}
		}
		h := (procH - 5) * min(lane[best]/tp.lz.procScale, 1)
		if h < 4 {
			continue
		}
		x := tp.L.PlotLeft + tp.lz.w*(float64(best)+0.5)
		want := over(laneFill, processRow, 0.55)
		if got := rgb(img.At(int(x), int(y0+procH-4))); dist(got, want) > 10 {
			fail("process %d: summary lane pixel (%d,%d) is %v, want %v (%.2f CPUs of %.0f)", k, int(x), int(y0+procH-4), got, want, lane[best], tp.lz.procScale)
		}
	}
	if bad > 15 {
		t.Errorf("… %d failed checks", bad)
	}
	last := tp.collapsedY(len(tp.L.Processes), open)
	if got := rgb(img.At(13, int(last+6))); dist(got, color.RGBA{255, 255, 255, 255}) > 6 {
		t.Errorf("something under the last process (y %.0f): %v", last+6, got)
	}
}

// checkTreeLane compares the tree's lane the script drew with the Go
// model's: at a spread of buckets, the fill reaches the height the model
// says, and not more.
func (tp *treePage) checkTreeLane(t *testing.T, img image.Image) {
	t.Helper()
	base := float64(LaneTop + LaneHeight)
	in, above := over(laneFill, laneBack, 0.55), laneBack
	checked := 0
	for i := 3; i < tp.lz.n; i += tp.lz.n / 40 {
		h := LaneHeight * min(tp.lz.tree[i]/tp.lz.treeScale, 1)
		x := int(tp.L.PlotLeft + tp.lz.w*(float64(i)+0.5))
		if h >= 4 {
			if got := rgb(img.At(x, int(base-h+2))); dist(got, in) > 10 {
				t.Errorf("tree lane bucket %d (%.2f CPUs): pixel (%d,%d) is %v, want the lane's %v", i, tp.lz.tree[i], x, int(base-h+2), got, in)
			}
			checked++
		}
		if h <= LaneHeight-4 {
			if got := rgb(img.At(x, int(base-h-3))); dist(got, above) > 10 {
				t.Errorf("tree lane bucket %d (%.2f CPUs): pixel above it (%d,%d) is %v, want the background %v", i, tp.lz.tree[i], x, int(base-h-3), got, above)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d buckets of the tree lane were tall enough to check", checked)
	}
}

// checkScript drives the page's script (window.timeline, keys, the search
// box) and reads the result from the DOM: the address, which processes
// show, which are open.
func (tp *treePage) checkScript(t *testing.T, browser string) {
	name := "link-w2" // a thread name in several link processes
	want := 0
	for _, p := range tp.r.Processes {
		for _, th := range p.Threads {
			if th.Name == name {
				want++
				break
			}
		}
	}
	script := `
var out = {};
function key(k) { window.dispatchEvent(new KeyboardEvent("keydown", {key: k, bubbles: true})); }
key("w"); out.zoomIn = timeline.view();
key("d"); out.panRight = timeline.view();
key("s"); out.zoomOut = timeline.view();
key("Escape"); out.reset = timeline.view();
var q = document.getElementById("q");
q.value = "` + name + `"; q.dispatchEvent(new Event("input"));
out.found = [].filter.call(document.querySelectorAll(".proc"), function (g) { return g.style.display !== "none"; }).length;
out.opened = [].filter.call(document.querySelectorAll(".proc .ths"), function (g) { return g.style.display !== "none"; }).length;
out.marked = document.querySelectorAll(".hit.found").length;
out.count = document.getElementById("qn").textContent;
out.hash = location.hash;
timeline.find(""); timeline.openAll();
out.allOpen = [].filter.call(document.querySelectorAll(".proc .ths"), function (g) { return g.style.display !== "none"; }).length;
document.body.setAttribute("data-out", JSON.stringify(out));`
	dom := dumpDOM(t, browser, tp.write(t, script, ""))
	m := regexp.MustCompile(`data-out="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the test script left no result: the page's script failed?\n%.2000s", dom)
	}
	out := strings.ReplaceAll(m[1], "&quot;", `"`)
	t.Logf("script: %s", out)
	span := float64(tp.L.End.Sub(tp.L.Origin).Nanoseconds()) / 1e3
	for _, c := range []struct{ key, want string }{
		{"zoomIn", fmt.Sprintf("[%s,%s]", num(span/4), num(span*3/4))},
		{"panRight", fmt.Sprintf("[%s,%s]", num(span/4+span/10), num(span*3/4+span/10))},
		{"reset", fmt.Sprintf("[0,%s]", num(span))},
	} {
		if !strings.Contains(out, `"`+c.key+`":`+c.want) {
			t.Errorf("%s: want %s in %s", c.key, c.want, out)
		}
	}
	for _, c := range []struct {
		key  string
		want int
	}{{"found", want}, {"opened", want}, {"allOpen", len(tp.L.Processes)}} {
		got := regexp.MustCompile(`"` + c.key + `":(\d+)`).FindStringSubmatch(out)
		if got == nil || got[1] != strconv.Itoa(c.want) {
			t.Errorf("%s = %v, want %d", c.key, got, c.want)
		}
	}
	if !strings.Contains(out, fmt.Sprintf(`"count":"%d of %d processes"`, want, len(tp.L.Processes))) ||
		!strings.Contains(out, `"hash":"#q=`+name+`"`) || !strings.Contains(out, fmt.Sprintf(`"marked":%d`, want)) {
		t.Errorf("search for %q: %s", name, out)
	}
}

// num prints v as JavaScript's JSON.stringify prints a number.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
