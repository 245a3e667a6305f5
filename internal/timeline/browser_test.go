package timeline

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// findChromium returns a Chromium-family browser that can run headless.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (chromium, chromium-browser, google-chrome): the picture is not checked in a browser; install it with apt-get install chromium")
	return ""
}

// screenshot renders the page at path in headless Chromium, at one CSS
// pixel per device pixel, and decodes the PNG it writes.
func screenshot(t *testing.T, browser, page string, w, h int) image.Image {
	t.Helper()
	return screenshotURL(t, browser, "file://"+page, w, h)
}

func screenshotURL(t *testing.T, browser, url string, w, h int) image.Image {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--no-first-run", "--disable-extensions",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+out, fmt.Sprintf("--window-size=%d,%d", w, h),
		url)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, msg)
	}
	t.Logf("Chromium rendered %dx%d in %v", w, h, time.Since(start).Round(time.Millisecond))
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("Chromium wrote no screenshot: %v\n%s", err, msg)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	if keep := os.Getenv("TIMELINE_SCREENSHOT"); keep != "" {
		data, _ := os.ReadFile(out)
		os.WriteFile(keep, data, 0o644)
	}
	return img
}

func rgb(c color.Color) color.RGBA {
	r, g, b, _ := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0xff}
}

// dist is the largest channel difference of two colours.
func dist(a, b color.RGBA) int {
	d := func(x, y uint8) int { return int(math.Abs(float64(x) - float64(y))) }
	return max(d(a.R, b.R), d(a.G, b.G), d(a.B, b.B))
}

// TestBrowserRendersOneBarPerThread renders WriteHTML's page of known
// recordings in headless Chromium and checks the pixels: the page is not
// blank, and each thread has its bar, in its colour, where the documented
// geometry puts it (PlotLeft + (t−origin)/(end−origin) × plot width), with
// the row background just before and after it. The small tree has labels,
// kernel underlines, a running thread and a zero-length one; the big one
// (2,000 threads) has rows shrunk to a few pixels.
func TestBrowserRendersOneBarPerThread(t *testing.T) {
	browser := findChromium(t)
	// In parallel: each browser waits on its own start-up much of the time.
	t.Run("tree", func(t *testing.T) { t.Parallel(); checkRendering(t, browser, sampleRecording()) })
	t.Run("2000threads", func(t *testing.T) { t.Parallel(); checkRendering(t, browser, bigRecording(2000, 10)) })
	t.Run("zoom", func(t *testing.T) { t.Parallel(); checkZoom(t, browser, false) })
	t.Run("drag", func(t *testing.T) { t.Parallel(); checkZoom(t, browser, true) })
}

// checkZoom opens the page zoomed to 250–450 ms, either through the
// address (#t=250000,450000) or by a drag across the plot from the pixel
// of 250 ms to that of 450 ms (mouse events a script appended to the page
// dispatches), and checks that the page's script moved each bar where the
// same geometry puts it for that span: clipped to the plot, hidden if
// outside it.
func checkZoom(t *testing.T, browser string, drag bool) {
	r := sampleRecording()
	L, err := ComputeLayout(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const from, to = 250e3, 450e3 // µs since the origin
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	html, url := buf.String(), "#t=250000,450000&open=all"
	if drag {
		span := float64(L.End.Sub(L.Origin).Nanoseconds()) / 1e3
		px := func(us float64) float64 { return PlotLeft + us/span*(L.PlotRight-PlotLeft) }
		y := (L.Threads[0].RowY0 + L.Threads[0].RowY1) / 2
		html = strings.Replace(html, "</body>", fmt.Sprintf(`<script>
function fire(el, type, x) { el.dispatchEvent(new MouseEvent(type, {clientX: x, clientY: %g, button: 0, bubbles: true})); }
fire(document.getElementById("rows"), "mousedown", %g);
fire(window, "mousemove", %g);
fire(window, "mouseup", %g);
</script>
</body>`, y, px(from), px((from+to)/2), px(to)), 1)
		url = "#open=all"
	}
	page := filepath.Join(t.TempDir(), "timeline.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	img := screenshotURL(t, browser, "file://"+page+url, L.Width, L.Height)
	px := func(x, y float64) color.RGBA { return rgb(img.At(int(x), int(y))) }
	plotR := float64(L.Width - StatsWidth)
	xOf := func(tm time.Time) float64 {
		us := float64(tm.Sub(L.Origin).Nanoseconds()) / 1e3
		return PlotLeft + (us-from)/(to-from)*(plotR-PlotLeft)
	}
	shown := 0
	for _, tb := range L.Threads {
		th := r.Processes[tb.Process].Threads[tb.Thread]
		end := th.Exit
		if end.IsZero() {
			end = r.End
		}
		x0 := xOf(th.Creation)
		x1 := max(xOf(end), x0+MinBarWidth)
		midY := tb.Y0 + (tb.Y1-tb.Y0)*0.3
		if x1 < PlotLeft || x0 > plotR {
			// Hidden: where the unzoomed bar was is row background.
			if got := px((tb.X0+tb.X1)/2, midY); dist(got, tb.Fill) < 24 && (tb.X0+tb.X1)/2 > PlotLeft {
				t.Errorf("thread %d is outside 250–450 ms but its bar is still drawn at %v", th.ID, (tb.X0+tb.X1)/2)
			}
			continue
		}
		shown++
		c0, c1 := max(x0, PlotLeft), min(x1, plotR)
		if got := px(math.Floor((c0+c1)/2)+0.5, midY); dist(got, tb.Fill) > 8 {
			t.Errorf("thread %d zoomed: pixel (%d,%d) is %v, want its bar's %v (bar %.1f–%.1f)", th.ID, int((c0+c1)/2), int(midY), got, tb.Fill, c0, c1)
		}
		if x0-5 > PlotLeft {
			if got := px(x0-5, midY); dist(got, tb.Fill) < 24 {
				t.Errorf("thread %d zoomed: pixel before its bar (%d) is its colour", th.ID, int(x0-5))
			}
		}
	}
	if shown != 5 {
		t.Errorf("%d threads overlap 250–450 ms in the zoomed page's geometry, want 5 (make, make-io, cc1, the script one, worker)", shown)
	}
}

func checkRendering(t *testing.T, browser string, r *Recording) {
	L, err := ComputeLayout(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "timeline.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Every process open: the page as WriteHTML drew it, which the
	// layout describes (the script starts with processes collapsed).
	img := screenshotURL(t, browser, "file://"+page+"#open=all", L.Width, L.Height)
	if b := img.Bounds(); b.Dx() != L.Width || b.Dy() != L.Height {
		t.Fatalf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), L.Width, L.Height)
	}
	px := func(x, y float64) color.RGBA { return rgb(img.At(int(x), int(y))) }

	// Not blank: many colours, and a fair share of the page is not white
	// (every third pixel each way: a tall page has millions).
	colours := map[color.RGBA]bool{}
	inked, seen := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			c := rgb(img.At(x, y))
			colours[c] = true
			seen++
			if dist(c, color.RGBA{255, 255, 255, 255}) > 24 {
				inked++
			}
		}
	}
	if share := float64(inked) / float64(seen); len(colours) < 32 || share < 0.03 {
		t.Fatalf("the page looks blank: %d colours, %.1f%% inked", len(colours), 100*share)
	}
	// The title's text is drawn (dark pixels in its line).
	dark := 0
	for y := 10; y < 36; y++ {
		for x := PadX; x < PadX+200; x++ {
			if c := px(float64(x), float64(y)); int(c.R)+int(c.G)+int(c.B) < 200 {
				dark++
			}
		}
	}
	if dark < 50 {
		t.Errorf("the title left %d dark pixels: no text rendered?", dark)
	}

	threads := 0
	for _, p := range r.Processes {
		threads += len(p.Threads)
	}
	if len(L.Threads) != threads {
		t.Fatalf("layout has %d thread rows for %d threads", len(L.Threads), threads)
	}
	span := L.End.Sub(L.Origin)
	plotW := float64(L.Width-StatsWidth) - PlotLeft
	xOf := func(tm time.Time) float64 { return PlotLeft + float64(tm.Sub(L.Origin))/float64(span)*plotW }
	bad := 0
	fail := func(format string, a ...any) {
		t.Helper()
		if bad++; bad <= 20 {
			t.Errorf(format, a...)
		}
	}
	for _, tb := range L.Threads {
		th := r.Processes[tb.Process].Threads[tb.Thread]
		end := th.Exit
		if end.IsZero() {
			end = r.End
		}
		// The layout against the documented geometry, from the model.
		wantX0, wantX1 := xOf(th.Creation), max(xOf(end), xOf(th.Creation)+MinBarWidth)
		if math.Abs(tb.X0-wantX0) > 0.01 || math.Abs(tb.X1-wantX1) > 0.01 {
			fail("thread %d: layout bar x %.2f–%.2f, geometry says %.2f–%.2f", th.ID, tb.X0, tb.X1, wantX0, wantX1)
		}
		cpu := th.User + th.Kernel
		want := UtilisationColor(float64(cpu) / float64(max(end.Sub(th.Creation), 1)))
		// Inside the bar, above the kernel underline.
		midX := math.Floor((tb.X0+tb.X1)/2) + 0.5
		midY := tb.Y0 + (tb.Y1-tb.Y0)*0.3
		if got := px(midX, midY); dist(got, want) > 8 {
			fail("thread %d: pixel (%d,%d) is %v, want its bar's %v", th.ID, int(midX), int(midY), got, want)
		}
		// Row background a few pixels before and after the bar (where the
		// plot has room): light, not the bar colour.
		for _, x := range []float64{tb.X0 - 5, tb.X1 + 9} {
			if x < PlotLeft || x > L.PlotRight {
				continue
			}
			got := px(x, midY)
			if dist(got, want) < 24 || got.R < 0xd0 || got.G < 0xd0 || got.B < 0xd0 {
				fail("thread %d: pixel (%d,%d) outside its bar is %v, want the light row background", th.ID, int(x), int(midY), got)
			}
		}
		// The kernel underline, where it is at least 3 pixels long.
		if kw := (tb.X1 - tb.X0) * tb.KernelShare; kw >= 3 && tb.Y1-tb.Y0 >= 6 {
			if got := px(tb.X0+1.5, tb.Y1-1); dist(got, KernelColor) > 8 {
				fail("thread %d: kernel underline pixel is %v, want %v", th.ID, got, KernelColor)
			}
		}
	}
	// Each process header row is drawn across the page.
	for _, pb := range L.Processes {
		if got := px(8, (pb.Y0+pb.Y1)/2); dist(got, color.RGBA{0xea, 0xee, 0xf2, 0xff}) > 6 {
			fail("process %d: header row pixel %v, want #eaeef2", r.Processes[pb.Process].ID, got)
		}
	}
	if bad > 20 {
		t.Errorf("… %d failed pixel checks in all", bad)
	}
}
