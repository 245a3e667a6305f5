package cli

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/cputime/cputime"
)

// deniedFake lists the fixture's processes and, between them, processes
// that may not be read, as cputime.Processes yields them under hidepid=1:
// their ID and an error wrapping ErrAccessDenied.
type deniedFake struct {
	fake
	denied []int
}

func (f deniedFake) Processes() iter.Seq2[cputime.ProcessInfo, error] {
	return func(yield func(cputime.ProcessInfo, error) bool) {
		for i, p := range f.procs {
			if i < len(f.denied) {
				id := f.denied[i]
				if !yield(cputime.ProcessInfo{ID: id}, fmt.Errorf("reading process %d: %w", id, cputime.ErrAccessDenied)) {
					return
				}
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

func (f deniedFake) Process(pid int) (cputime.ProcessInfo, error) {
	for _, id := range f.denied {
		if id == pid {
			return cputime.ProcessInfo{}, fmt.Errorf("reading process %d: %w", pid, cputime.ErrAccessDenied)
		}
	}
	return f.fake.Process(pid)
}

// TestListingAccessDenied: the listing shows the processes it may not read,
// marked, in the table and in the JSON, says how many on one line of
// stderr, and exits 0; naming such a process is an error (exit 1).
func TestListingAccessDenied(t *testing.T) {
	src := deniedFake{fake: fixture(), denied: []int{900, 901}}
	out, errs, status := runCLIWith(t, src, fakeCycles{})
	if status != exitOK {
		t.Errorf("listing: exit status %d, want 0", status)
	}
	if want := "cputime: 2 processes could not be read: access denied (shown as such)\n"; errs != want {
		t.Errorf("listing: stderr %q, want %q", errs, want)
	}
	for _, id := range []string{"900", "901"} {
		found := false
		for l := range strings.Lines(out) {
			if f := strings.Fields(l); len(f) > 0 && f[0] == id {
				found = strings.Contains(l, "(access denied)")
			}
		}
		if !found {
			t.Errorf("listing: no row for %s marked access denied:\n%s", id, out)
		}
	}

	out, errs, status = runCLIWith(t, src, fakeCycles{}, "--json")
	if status != exitOK || !strings.Contains(errs, "2 processes could not be read") {
		t.Errorf("--json: status %d, stderr %q", status, errs)
	}
	var procs []map[string]any
	if err := json.Unmarshal([]byte(out), &procs); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, p := range procs {
		if p["access_denied"] == true {
			marked++
			if p["creation_time"] != nil {
				t.Errorf("--json: denied process %v has a creation time %q", p["pid"], p["creation_time"])
			}
		}
	}
	if marked != 2 || len(procs) != 5 {
		t.Errorf("--json: %d processes, %d marked access_denied; want 5 and 2", len(procs), marked)
	}

	_, errs, status = runCLIWith(t, src, fakeCycles{}, "900")
	if status != exitFailed || errs != "cputime: 900: access denied\n" {
		t.Errorf("named: status %d, stderr %q", status, errs)
	}
}
