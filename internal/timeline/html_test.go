package timeline

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
	"unicode"
)

func TestHTMLEscapesNames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, sampleRecording()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// The page's one script is its own (the optional zoom).
	if n := strings.Count(strings.ToLower(page), "<script"); n != 1 {
		t.Errorf("%d <script> elements, want the page's own one", n)
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the escaped name is not shown")
	}
	if !strings.Contains(page, "worker?evil?[31m?x") {
		t.Errorf("the bidi/control name is not shown sanitized")
	}
	for i, r := range page {
		if r == '\n' {
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			t.Fatalf("page holds %U at byte %d", r, i)
		}
	}
	// A hostile top process names the page's title and header.
	r := sampleRecording()
	r.Processes[0].Name = "</title><script>x()</script>\u202e"
	r.Processes[0].Threads[0].Name = r.Processes[0].Name
	var b2 bytes.Buffer
	if err := WriteHTML(&b2, r); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b2.String(), "<script") != 1 ||
		!strings.Contains(b2.String(), "<title>cputime timeline: &lt;/title&gt;&lt;script&gt;x()&lt;/script&gt;?</title>") {
		t.Errorf("a hostile process name escaped the page title")
	}
	for _, banned := range []string{"http://", "https://", "src=", "href=", "@import", "url(http"} {
		if banned == "http://" {
			// The SVG namespace is a name, not a resource; nothing else may link out.
			page = strings.ReplaceAll(page, `"http://www.w3.org/2000/svg"`, "")
		}
		if strings.Contains(page, banned) {
			t.Errorf("page refers to an external resource or script: %q", banned)
		}
	}
}

// TestSVGWellFormed parses WriteSVG's output as XML (hostile names
// included) and counts one row group per process and per thread, and one
// bar per thread.
func TestSVGWellFormed(t *testing.T) {
	r := sampleRecording()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	groups, bars := 0, 0
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			for _, a := range el.Attr {
				if a.Name.Local == "class" && (a.Value == "r" || a.Value == "r ph") && el.Name.Local == "g" {
					groups++
				}
				// The main bar is the first class="bar" rect of a row; the
				// kernel underline shares the class, so count by fill.
				if a.Name.Local == "class" && a.Value == "bar" {
					bars++
				}
			}
		case xml.CharData:
			text.Write(el)
		}
	}
	threads, kernelStrips := 0, 0
	L, _ := ComputeLayout(r, Options{})
	for _, tb := range L.Threads {
		threads++
		if tb.KernelShare > 0 && tb.Y1-tb.Y0 >= 6 {
			kernelStrips++
		}
	}
	if groups != threads+len(r.Processes) {
		t.Errorf("%d row groups, want %d threads + %d processes", groups, threads, len(r.Processes))
	}
	if bars != threads+kernelStrips {
		t.Errorf("%d bar rects, want %d bars + %d kernel underlines", bars, threads, kernelStrips)
	}
	// Decoded, the hostile name reads as itself (escaped, not dropped).
	if !strings.Contains(text.String(), hostileScript) {
		t.Errorf("decoded SVG text lacks the name %q", hostileScript)
	}
}

func TestHTMLEmptyAndZeroLength(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, &Recording{}); err != nil {
		t.Fatalf("empty recording: %v", err)
	}
	if !strings.Contains(buf.String(), "No process was recorded.") {
		t.Errorf("empty recording's page does not say so")
	}
	buf.Reset()
	if err := WriteSVG(&buf, &Recording{}); err != nil {
		t.Fatalf("empty recording as SVG: %v", err)
	}
	if err := xml.Unmarshal(buf.Bytes(), new(struct{})); err != nil {
		t.Errorf("empty SVG is not XML: %v", err)
	}
	// Everything at one instant: no division by zero, bars still visible.
	r := &Recording{Start: at(0), End: at(0), Processes: []Process{{ID: 1, Name: "a", Creation: at(0), Exit: at(0),
		Threads: []Thread{{ID: 1, Name: "a", Creation: at(0), Exit: at(0)}}}}}
	L, err := ComputeLayout(r, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tb := L.Threads[0]; tb.X1-tb.X0 < MinBarWidth || tb.X0 != PlotLeft || tb.Utilisation != 0 {
		t.Errorf("zero-length thread bar %+v", tb)
	}
	buf.Reset()
	if err := WriteHTML(&buf, r); err != nil || strings.Contains(buf.String(), "NaN") || strings.Contains(buf.String(), "Inf") {
		t.Errorf("zero-length recording: err %v, NaN/Inf in page: %v", err, strings.Contains(buf.String(), "NaN"))
	}
}

// TestHTMLManyThreads: a few thousand threads all drawn, rows shrunk to fit
// a bounded height; past the cap, the rest counted in a note.
func TestHTMLManyThreads(t *testing.T) {
	r := bigRecording(4000, 8)
	start := time.Now()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	L, _ := ComputeLayout(r, Options{})
	if len(L.Threads) != 4000 || L.HiddenThreads != 0 {
		t.Errorf("4000 threads: %d drawn, %d hidden", len(L.Threads), L.HiddenThreads)
	}
	if L.RowHeight < MinRowHeight || L.RowHeight >= MaxRowHeight {
		t.Errorf("row height %d for 4000 threads, want shrunk within [%d, %d)", L.RowHeight, MinRowHeight, MaxRowHeight)
	}
	// Rows do not overlap and bars stay inside their rows.
	prev := float64(HeaderHeight)
	for _, tb := range L.Threads {
		if tb.RowY0 < prev || tb.Y0 < tb.RowY0 || tb.Y1 > tb.RowY1 || tb.Y1 <= tb.Y0 {
			t.Fatalf("row %+v overlaps the one above (ends %v) or holds its bar badly", tb, prev)
		}
		prev = tb.RowY1
	}
	t.Logf("4000 threads in 500 processes: %d KiB of HTML in %v, %d px tall, rows %d px", buf.Len()>>10, elapsed.Round(time.Millisecond), L.Height, L.RowHeight)
	if buf.Len() > 8<<20 {
		t.Errorf("page is %d MiB", buf.Len()>>20)
	}

	L, err := ComputeLayout(r, Options{MaxThreads: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(L.Threads) != 1000 || L.HiddenThreads != 3000 || L.HiddenProcesses != 375 {
		t.Errorf("cap 1000: %d drawn, %d hidden in %d processes; want 1000, 3000, 375", len(L.Threads), L.HiddenThreads, L.HiddenProcesses)
	}
	buf.Reset()
	if err := WriteHTMLOptions(&buf, r, Options{MaxThreads: 1000}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "3000 more threads (in 375 processes) not drawn") {
		t.Errorf("capped page lacks the note on hidden threads")
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain":               "plain",
		"a\u202eb":            "a?b",
		"tab\there":           "tab?here",
		"\x1b[2J":             "?[2J",
		"\xff\xfe":            "??",
		"caf\u00e9 \u4e16":    "caf\u00e9 \u4e16",
		"zero\u200dwidth":     "zero?width",
		"iso\u2066late\u2069": "iso?late?",
		"c1\u009bx":           "c1?x",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// The tree lane's header gives the average and the peak tasks on a CPU:
// 1.5 and 2 on the hand-made recording of TestParallelismHandMade.
func TestHTMLParallelism(t *testing.T) {
	r := &Recording{Start: at(0), End: at(1000), Processes: []Process{
		{ID: 1, Name: "a", Creation: at(0), Exit: at(1000), User: ms(1250), Threads: []Thread{
			{ID: 1, Name: "a", Creation: at(0), Exit: at(1000), User: ms(1000)},
			{ID: 2, Name: "a2", Creation: at(500), Exit: at(1000), User: ms(250)},
		}},
		{ID: 3, Parent: 1, Name: "b", Creation: at(0), Exit: at(1000), User: ms(250), Threads: []Thread{
			{ID: 3, Name: "b", Creation: at(0), Exit: at(1000), User: ms(250), Samples: []Sample{{At: at(250), CPU: ms(250)}}},
		}},
	}}
	var b strings.Builder
	if err := WriteSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">1.50 avg<", ">2.00 peak<"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
}
