// Command testsummary reads "go test -json" from its standard input and
// prints what plain "go test" prints (each package's ok or FAIL line, and
// the output of the tests that failed), then which tests were skipped and
// why. It exits with status 1 if a test or a build failed. The README's test
// command pipes into it:
//
//	go test -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	// ImportPath is set on the go command's build events (Go 1.24):
	// "build-output" carries the compiler's words, "build-fail" ends them.
	ImportPath string
}

type key struct{ pkg, test string }

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	outputs := map[key][]string{} // each test's output, until it ends
	var skipped []string
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event: the go command's own words (a build error).
			fmt.Fprintln(out, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" {
				// Package level: the ok/FAIL line, build output, panics.
				if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
					fmt.Fprint(out, e.Output)
				}
				continue
			}
			outputs[k] = append(outputs[k], e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				for _, o := range outputs[k] {
					if !strings.HasPrefix(o, "=== ") {
						fmt.Fprint(out, o)
					}
				}
			}
			delete(outputs, k)
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", short(e.Package), e.Test, reason(outputs[k])))
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary: reading go test -json:", err)
		return 1
	}
	if len(skipped) > 0 {
		slices.Sort(skipped)
		fmt.Fprintf(out, "\n%d tests skipped (install what they name to run them; .ci/run installs everything):\n", len(skipped))
		for _, s := range skipped {
			fmt.Fprintln(out, "  "+s)
		}
	} else {
		fmt.Fprintln(out, "\nno test skipped")
	}
	if failed {
		fmt.Fprintln(out, "FAIL")
		return 1
	}
	return 0
}

// reason is a skipped test's last line of its own output (what t.Skip
// said), without the file:line prefix.
func reason(lines []string) string {
	for _, l := range slices.Backward(lines) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(msg)], ".go:") {
			return msg
		}
		return l
	}
	return "(no reason given)"
}

// short drops the module path from a package's import path.
func short(pkg string) string {
	if r, ok := strings.CutPrefix(pkg, "github.com/cputime/cputime/"); ok {
		return r
	}
	if pkg == "github.com/cputime/cputime" {
		return "cputime"
	}
	return pkg
}
