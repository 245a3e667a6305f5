package cputime_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// snippet is one ```go block of a document: its text and the line of the
// document its first line is on.
type snippet struct {
	doc  string
	line int
	text string
}

// goSnippets returns the ```go blocks of a Markdown file.
func goSnippets(t *testing.T, doc string) []snippet {
	t.Helper()
	f, err := os.Open(doc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []snippet
	var cur *strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.TrimSpace(line)
		switch {
		case cur == nil && (fence == "```go" || strings.HasPrefix(fence, "```go ")):
			cur, start = new(strings.Builder), n+1
		case cur != nil && fence == "```":
			out = append(out, snippet{doc, start, cur.String()})
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: a ```go block is not closed", doc, start-1)
	}
	return out
}

// TestDocSnippetsCompile: every ```go block of README.md and docs/*.md is
// a whole Go file that builds, as a user who pastes it gets it. The
// convention: a ```go block starts with its package clause (package main
// with a main function, as a rule) and has its imports; what is not a
// whole file (a signature, a pair of import lines to swap, a fragment)
// goes in a block of another kind (```text, ```diff). Each block is
// written as a program of a module of its own, joined to the repository's
// modules by a go.work that uses them all (so the module cache needs
// nothing more than the repository does, and no network), and go vet
// builds and checks them all; the errors point at the documents' lines.
func TestDocSnippetsCompile(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the documents' snippets:", err)
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{"README.md"}, docs...)
	var snippets []snippet
	for _, doc := range docs {
		snippets = append(snippets, goSnippets(t, doc)...)
	}
	if len(snippets) == 0 {
		t.Fatal("no ```go block in README.md or docs/*.md: is the test in the repository's root?")
	}

	// The repository's workspace modules, as the go command reads go.work.
	cmd := exec.Command(gocmd, "work", "edit", "-json")
	cmd.Env = append(os.Environ(), "GOWORK=")
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct {
		Go      string
		Use     []struct{ DiskPath string }
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path string }
		}
	}
	if err := json.Unmarshal(js, &work); err != nil {
		t.Fatal(err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	var gowork strings.Builder
	fmt.Fprintf(&gowork, "go %s\n\nuse (\n\t./snippets\n", work.Go)
	for _, u := range work.Use {
		fmt.Fprintf(&gowork, "\t%q\n", filepath.Join(root, u.DiskPath))
	}
	gowork.WriteString(")\n")
	// The replaces that stand the workspace in for the version the modules
	// require each other at (go.work says why).
	for _, r := range work.Replace {
		fmt.Fprintf(&gowork, "\nreplace %s %s => %q\n", r.Old.Path, r.Old.Version, filepath.Join(root, r.New.Path))
	}
	write := func(name, s string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", gowork.String())
	if sum, err := os.ReadFile("go.work.sum"); err == nil {
		write("go.work.sum", string(sum))
	}
	write("snippets/go.mod", fmt.Sprintf("module example.com/snippets\n\ngo %s\n", work.Go))
	for i, s := range snippets {
		if !strings.HasPrefix(strings.TrimSpace(s.text), "package ") {
			t.Errorf("%s:%d: a ```go block that is not a whole file (no package clause first): make it a program, or show it as ```text", s.doc, s.line)
			continue
		}
		// The //line comment makes the compiler's and vet's positions
		// the document's.
		write(fmt.Sprintf("snippets/s%02d/main.go", i), fmt.Sprintf("//line %s:%d\n%s", filepath.Join(root, s.doc), s.line, s.text))
	}
	if t.Failed() {
		return
	}
	vet := exec.Command(gocmd, "vet", "./...")
	vet.Dir = filepath.Join(dir, "snippets")
	// No flags of the caller's (-mod=mod is refused in a workspace). The
	// modules the snippets import are the workspace's requirements, which
	// the go command fetches as go test does on a machine that lacks them.
	vet.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Errorf("go vet of the %d ```go blocks of README.md and docs/*.md: %v\n%s", len(snippets), err, out)
	}
}

// TestDocGoroutinesHandlerApart: no ```go block both serves
// goroutines.Handler() and records with goroutines.Start(): one recording
// runs at a time per process, so while the program records, the handler
// answers 409 Conflict to the request the example invites (the goroutines
// module's tests check that answer). The documents show the two as
// separate programs.
func TestDocGoroutinesHandlerApart(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range append([]string{"README.md"}, docs...) {
		for _, s := range goSnippets(t, doc) {
			if strings.Contains(s.text, "goroutines.Handler()") && strings.Contains(s.text, "goroutines.Start()") {
				t.Errorf("%s:%d: a program that serves goroutines.Handler() and records with goroutines.Start(): the handler answers 409 while it records", s.doc, s.line)
			}
		}
	}
}
