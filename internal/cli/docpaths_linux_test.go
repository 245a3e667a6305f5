package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docPath is a JSON path the documents name in backquotes, dotted from an
// output's top level (`recording.complete`, `exit.code: 0`): lower-case
// words and underscores, with an optional ": value" after it.
var docPath = regexp.MustCompile("`([a-z_]+(?:\\.[a-z_]+)+)(?::[^`]*)?`")

// docField is a field the documents show as JSON text (`"complete": true`),
// which reads as a top-level field.
var docField = regexp.MustCompile("`\"([a-z_]+)\": ?[^`,]*`")

// fileExt are the last words of file names the documents name.
var fileExt = map[string]bool{"go": true, "md": true, "json": true, "html": true, "mod": true, "sum": true, "work": true, "txt": true, "sh": true, "yml": true, "service": true}

// TestDocJSONPathsExist: every dotted JSON path that README.md and
// docs/*.md name, whose first word is a top-level field of one of the
// JSON outputs (run --tree's record, the listing with threads, top's
// refresh, cpus), is a path of that output as the commands print it now.
// A field shown as JSON text (`"complete": true`) must be a top-level one:
// where it is only a nested field (`recording.complete`), the test fails
// and names the path.
func TestDocJSONPathsExist(t *testing.T) {
	paths := map[string]bool{}
	tops := map[string]bool{}
	add := func(what string, b []byte) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(b))
		n := 0
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v:\n%s", what, err, b)
			}
			if a, ok := v.([]any); ok { // the listing: an array of process objects
				for _, x := range a {
					jsonPaths(x, "", paths, tops)
				}
			} else {
				jsonPaths(v, "", paths, tops)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("%s printed no JSON", what)
		}
	}

	file := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.Command(os.Args[0], "run", "--tree", "--json", "-o", file, "--", "sh", "-c", "sh -c true")
	cmd.Env = append(os.Environ(), cliHelperEnv+"=cli")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cputime run: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	add("run --tree --json", b)
	self := strconv.Itoa(os.Getpid())
	for _, args := range [][]string{{"--json", "-H", self}, {"top", "-b", "-n", "1", "--json", "-H", "-p", self}, {"cpus", "--json"}} {
		var out, errb bytes.Buffer
		if code := Run(Env{Stdout: &out, Stderr: &errb, Source: System{}}, args); code != 0 {
			t.Fatalf("cputime %s: status %d: %s", strings.Join(args, " "), code, errb.String())
		}
		add("cputime "+strings.Join(args, " "), out.Bytes())
	}

	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append([]string{"../../README.md"}, docs...) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range docPath.FindAllStringSubmatch(line, -1) {
				p := m[1]
				words := strings.Split(p, ".")
				if !tops[words[0]] || fileExt[words[len(words)-1]] {
					continue // not a JSON path of these outputs: go.work, cycles.go
				}
				checked++
				if !paths[p] {
					t.Errorf("%s:%d: %s is not a path of the JSON the commands print", filepath.Base(doc), i+1, m[0])
				}
			}
			for _, m := range docField.FindAllStringSubmatch(line, -1) {
				if k := m[1]; !tops[k] {
					for p := range paths {
						if strings.HasSuffix(p, "."+k) {
							t.Errorf("%s:%d: %s is not a top-level field; name it by its path (%s)", filepath.Base(doc), i+1, m[0], p)
							break
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("the documents name no dotted JSON path: is the test reading them?")
	}
}

// jsonPaths adds the dotted paths of v's fields under prefix (array
// elements take their array's path) to paths, and the top-level field
// names to tops.
func jsonPaths(v any, prefix string, paths, tops map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix == "" {
				tops[k] = true
			} else {
				p = prefix + "." + k
			}
			paths[p] = true
			jsonPaths(e, p, paths, tops)
		}
	case []any:
		for _, e := range x {
			jsonPaths(e, prefix, paths, tops)
		}
	}
}
