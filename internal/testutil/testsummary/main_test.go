package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The summary of a real go test -json run of a package written for it: one
// pass, one skip with a reason, one failure with its output.
func TestSummaryOfRealRun(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/m\n\ngo 1.22\n")
	write(t, dir+"/m_test.go", `package m

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("no frobnicator installed") }
func TestFail(t *testing.T) { t.Error("the widget broke") }
`)
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	js, _ := cmd.Output() // fails: TestFail
	var out bytes.Buffer
	if code := run(bytes.NewReader(js), &out); code != 1 {
		t.Errorf("exit status %d for a failed run, want 1", code)
	}
	s := out.String()
	for _, want := range []string{"the widget broke", "1 tests skipped", "m TestSkip: no frobnicator installed", "FAIL",
		"1 failed:\n  example.com/m TestFail: m_test.go:7: the widget broke\nFAIL\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "TestPass") {
		t.Errorf("summary names a passing test:\n%s", s)
	}
}

// A package that does not build: the compiler's words are printed and the
// run fails.
func TestSummaryOfBuildFailure(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/m\n\ngo 1.22\n")
	write(t, dir+"/m.go", "package m\n\nfunc f() int { return undefinedThing }\n")
	write(t, dir+"/m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { f() }\n")
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	js, _ := cmd.Output()
	var out bytes.Buffer
	if code := run(bytes.NewReader(js), &out); code != 1 {
		t.Errorf("exit status %d for a build failure, want 1:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "undefinedThing") {
		t.Errorf("the compiler's error is not shown:\n%s", out.String())
	}
}

// TestSummaryNamesFailingTests: the summary ends by naming every failure
// with its package: a failed subtest (not its parent, which said nothing
// of its own), a failed test beside passing ones, a test binary that
// exited badly after its tests passed, a package that does not build with
// the compiler's error, and one whose dependency does not build. A
// passing, a skipped and a helper-process test are not named.
func TestSummaryNamesFailingTests(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command:", err)
	}
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/m\n\ngo 1.22\n")
	for _, f := range []struct{ path, src string }{
		{"sub/s_test.go", `package sub

import "testing"

func TestOuter(t *testing.T) {
	t.Run("inner", func(t *testing.T) { t.Error("inner broke") })
	t.Run("fine", func(t *testing.T) {})
}
func TestAlone(t *testing.T) { t.Fatal("alone broke") }
func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("no frobnicator installed") }
`},
		{"helper/h_test.go", `package helper

import (
	"os"
	"testing"
)

func TestHelperProcess(t *testing.T) {
	if os.Getenv("M_HELPER") == "" {
		return
	}
	os.Exit(0)
}
`},
		{"exit/e_test.go", `package exit

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { m.Run(); os.Exit(3) }
func TestPass(t *testing.T) {}
`},
		{"broken/b.go", "package broken\n\nfunc F() int { return undefinedThing }\n"},
		{"broken/b_test.go", "package broken\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n"},
		{"user/u_test.go", "package user\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/broken\"\n)\n\nfunc TestF(t *testing.T) { broken.F() }\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f.path)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f.path), f.src)
	}
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	js, _ := cmd.Output() // fails
	var out bytes.Buffer
	if code := run(bytes.NewReader(js), &out); code != 1 {
		t.Errorf("exit status %d for a failed run, want 1", code)
	}
	s := out.String()
	_, tail, ok := strings.Cut(s, "\n5 failed:\n")
	if !ok {
		t.Fatalf("no \"5 failed:\" section:\n%s", s)
	}
	want := []string{
		"  example.com/m/broken: build failed (example.com/m/broken [example.com/m/broken.test]):",
		"      broken/b.go:3:23: undefined: undefinedThing",
		"  example.com/m/exit: the test binary failed outside its tests (TestMain, init or an exit; its output is above)",
		"  example.com/m/sub TestAlone: s_test.go:9: alone broke",
		"  example.com/m/sub TestOuter/inner: s_test.go:6: inner broke",
		"  example.com/m/user: build failed (example.com/m/broken):",
		"      broken/b.go:3:23: undefined: undefinedThing",
		"FAIL",
	}
	if got := strings.Split(strings.TrimSuffix(tail, "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("the summary ends with\n%s\nwant\n%s\nwhole summary:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), s)
	}
	if !strings.Contains(s, "sub TestSkip: no frobnicator installed") || strings.Contains(s, "TestHelperProcess") {
		t.Errorf("want TestSkip listed as skipped and TestHelperProcess nowhere:\n%s", s)
	}

	// The same input cut short, as when go test is killed: the tests that
	// had started and not ended are named.
	i := bytes.Index(js, []byte(`"Action":"fail","Package":"example.com/m/sub","Test":"TestOuter/inner"`))
	if i < 0 {
		t.Fatalf("no fail event for TestOuter/inner in\n%s", js)
	}
	cut := js[:bytes.LastIndexByte(js[:i], '\n')+1]
	out.Reset()
	if code := run(bytes.NewReader(cut), &out); code != 1 {
		t.Errorf("exit status %d for a cut input, want 1", code)
	}
	if !strings.Contains(out.String(), "example.com/m/sub TestOuter/inner: did not end") {
		t.Errorf("a cut input does not name the test it stopped in:\n%s", out.String())
	}

	// A test binary that times out: the test it was in is named (go test
	// sends no fail event for it), not its parent, not the package.
	if err := os.Mkdir(dir+"/slow", 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir+"/slow/s_test.go", `package slow

import (
	"testing"
	"time"
)

func TestFast(t *testing.T) {}
func TestSlow(t *testing.T) {
	t.Run("sleeps", func(t *testing.T) { time.Sleep(time.Minute) })
}
`)
	cmd = exec.Command("go", "test", "-json", "-timeout", "2s", "./slow")
	cmd.Dir = dir
	js, _ = cmd.Output()
	out.Reset()
	if code := run(bytes.NewReader(js), &out); code != 1 {
		t.Errorf("exit status %d for a timeout, want 1", code)
	}
	if _, tail, _ := strings.Cut(out.String(), "\n1 failed:\n"); !strings.HasPrefix(tail, "  example.com/m/slow TestSlow/sleeps: did not end: the test binary failed while it ran") {
		t.Errorf("a timeout does not end the summary by naming the test it stopped:\n%s", out.String())
	}

	out.Reset()
	if code := run(strings.NewReader(""), &out); code != 1 || !strings.Contains(out.String(), "no go test -json events") {
		t.Errorf("empty input: status %d, %q; want 1 and what was missing", code, out.String())
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := writeFile(path, s); err != nil {
		t.Fatal(err)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// TestHelperProcessesAreNotSkips: a test function that is the child
// process of other tests (named *HelperProcess, as in os/exec's tests)
// returns when go test runs it rather than calling t.Skip, so that the
// summary's skipped tests are only tests that did not run. It reads every
// _test.go file of the repository.
func TestHelperProcessesAreNotSkips(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("the repository root is not %s: %v", root, err)
	}
	helpers := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasSuffix(fn.Name.Name, "HelperProcess") {
				continue
			}
			helpers++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Skip") {
					t.Errorf("%s: %s calls %s: a helper process should return when run as a test", path, fn.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if helpers == 0 {
		t.Error("no *HelperProcess function found: is the walk reading the repository?")
	}
}
