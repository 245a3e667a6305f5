package timeline

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// FuzzNames: whatever a task calls itself, the trace is JSON, the SVG is
// well-formed XML, and neither page nor picture gains markup from it.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "make", hostileScript, hostileBidi, "]]><!--", "&amp;", "\"'<>", "\xff\x00\x9b", "a\u2028b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		r := sampleRecording()
		r.Processes[0].Name = name
		r.Processes[1].Threads[1].Name = name
		var buf bytes.Buffer
		if err := WriteTrace(&buf, r); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("trace is not JSON for name %q", name)
		}
		buf.Reset()
		if err := WriteSVG(&buf, r); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&buf)
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("SVG is not XML for name %q: %v", name, err)
			}
		}
		buf.Reset()
		if err := WriteHTML(&buf, r); err != nil {
			t.Fatal(err)
		}
		page := strings.ToLower(buf.String())
		if strings.Count(page, "<script") != 1 || strings.Count(page, "</script") != 1 {
			t.Fatalf("name %q added a script to the page", name)
		}
		for _, tag := range []string{"<!--", "<![cdata"} {
			if strings.Contains(page, tag) {
				t.Fatalf("name %q put %s into the page", name, tag)
			}
		}
	})
}
