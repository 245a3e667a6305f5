package main

import (
	"bytes"
	"os"
	"os/exec"
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
	for _, want := range []string{"the widget broke", "1 tests skipped", "m TestSkip: no frobnicator installed", "FAIL"} {
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

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := writeFile(path, s); err != nil {
		t.Fatal(err)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
