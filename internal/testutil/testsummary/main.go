// Command testsummary reads "go test -json" from its standard input and
// prints what plain "go test" prints (each package's ok or FAIL line, and
// the output of the tests that failed), then which tests were skipped and
// why, and last every test that failed, with its package and its first
// line of output (a package whose build failed, with the compiler's
// errors; one whose test binary failed outside its tests; a test the input
// ended within). It exits with status 1 if anything failed. The README's
// test command pipes into it:
//
//	go test -json ./... | go run ./internal/testutil/testsummary
package main

import (
	"bufio"
	"cmp"
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
	// FailedBuild, on a package's "fail", is the ImportPath of the build
	// that failed it.
	FailedBuild string
}

type key struct{ pkg, test string }

// failure is a failed test, or a failed package with no failed test (its
// test binary exited badly, or a build failed).
type failure struct {
	key
	why string
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

func run(in io.Reader, out io.Writer) int {
	outputs := map[key][]string{}   // each test's output, until it ends
	running := map[key]bool{}       // tests and packages started, not ended
	builds := map[string][]string{} // each build's compiler output
	var skipped []string
	var failures []failure
	failedTests := map[string]int{} // per package
	events := 0
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
		events++
		k := key{e.Package, e.Test}
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			// The package's test binary ended: so did whatever it ran.
			// A benchmark has no end event of its own; a test that was
			// running when the binary failed (a timeout, a crash) is
			// named for it.
			for r := range running {
				if r.pkg != e.Package || r.test == "" {
					continue
				}
				delete(running, r)
				if e.Action == "fail" && strings.HasPrefix(r.test, "Test") {
					printOutput(out, outputs[r])
					failures = append(failures, failure{r, "did not end: the test binary failed while it ran (a timeout or a crash; its output is above)"})
					failedTests[e.Package]++
				}
				delete(outputs, r)
			}
		}
		switch e.Action {
		case "start", "run":
			running[k] = true
		case "build-output":
			fmt.Fprint(out, e.Output)
			if !strings.HasPrefix(e.Output, "# ") {
				builds[e.ImportPath] = append(builds[e.ImportPath], strings.TrimRight(e.Output, "\n"))
			}
		case "build-fail":
			if _, ok := builds[e.ImportPath]; !ok {
				builds[e.ImportPath] = nil
			}
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
			delete(running, k)
			switch {
			case e.Test != "":
				printOutput(out, outputs[k])
				failures = append(failures, failure{k, message(outputs[k])})
				failedTests[e.Package]++
			case e.FailedBuild != "":
				failures = append(failures, failure{k, buildFailure(e.FailedBuild, builds)})
			case failedTests[e.Package] == 0:
				failures = append(failures, failure{k, "the test binary failed outside its tests (TestMain, init or an exit; its output is above)"})
			}
			delete(outputs, k)
		case "skip":
			delete(running, k)
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s: %s", short(e.Package), e.Test, reason(outputs[k])))
			}
			delete(outputs, k)
		case "pass":
			delete(running, k)
			delete(outputs, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary: reading go test -json:", err)
		return 1
	}
	if events == 0 {
		fmt.Fprintln(out, "testsummary: no go test -json events on standard input (go test's own errors go to its standard error)")
		return 1
	}
	for k := range running {
		failures = append(failures, failure{k, "did not end: the input stopped first (go test killed?)"})
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
	if len(failures) == 0 {
		return 0
	}
	failures = leaves(failures)
	slices.SortFunc(failures, func(a, b failure) int {
		return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.test, b.test))
	})
	fmt.Fprintf(out, "\n%d failed:\n", len(failures))
	for _, f := range failures {
		name := short(f.pkg)
		if f.test != "" {
			name += " " + f.test
		}
		fmt.Fprintf(out, "  %s: %s\n", name, strings.ReplaceAll(f.why, "\n", "\n      "))
	}
	fmt.Fprintln(out, "FAIL")
	return 1
}

// printOutput prints a failed test's output, as plain go test does.
func printOutput(out io.Writer, lines []string) {
	for _, o := range lines {
		if !strings.HasPrefix(o, "=== ") {
			fmt.Fprint(out, o)
		}
	}
}

// leaves drops a failed test that said nothing of its own (or did not
// end) where one of its subtests failed (or did not end): the subtest's
// name names it.
func leaves(fs []failure) []failure {
	return slices.DeleteFunc(fs, func(f failure) bool {
		if f.test == "" || f.why != "" && !strings.HasPrefix(f.why, "did not end") {
			return false
		}
		return slices.ContainsFunc(fs, func(g failure) bool {
			return g.pkg == f.pkg && strings.HasPrefix(g.test, f.test+"/")
		})
	})
}

// buildFailure is the compiler's output for the failed build path, or
// where it had none, the build's name.
func buildFailure(path string, builds map[string][]string) string {
	if lines := builds[path]; len(lines) > 0 {
		return "build failed (" + path + "):\n" + strings.Join(lines, "\n")
	}
	return "build failed (" + path + "; its errors are above)"
}

// message is a failed test's first line of its own output (what t.Error
// or a panic said), or "" where it printed none (a subtest failed).
func message(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "=== ") {
			continue
		}
		return l
	}
	return ""
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
