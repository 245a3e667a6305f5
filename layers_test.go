package cputime_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The layers of the project, lowest first (docs/ARCHITECTURE.md draws
// them). A package may import packages of lower layers only, never of its
// own or a higher one, except where allowedAcross says so: calls go one way,
// API → engine → kernel interfaces, and the capabilities built on the API
// never reach into each other. A package of the project that is not listed
// fails the test: place it.
var layers = [][]string{
	// Kernel and system interfaces: parsers and system calls, no policy.
	{"internal/procfs", "internal/kernel", "internal/taskstats", "internal/perfring", "internal/winapi", "internal/names", "internal/buildinfo", "internal/suggest"},
	// The rules the engine applies: the split, creation dating, the checks
	// of what the kernel reports; the reference frequency.
	{"internal/account", "internal/freq", "internal/cliflag"},
	// The Linux engine: identity, clocks, exit evidence, the reads of /proc.
	{"internal/engine"},
	// The API: the Win32 questions answered once, and their Win32 shape.
	{"", "win32"},
	// Formats the capabilities write.
	{"internal/timeline"},
	// A command's tree in a Windows job object, which the recorder's Run
	// uses where it cannot record.
	{"internal/jobtree"},
	// Capabilities built on the API and the engine.
	{"sampler", "internal/recorder", "goroutines"},
	// Capabilities built on the sampler's public API.
	{"internal/top", "exporter", "goroutines/promgoroutines", "goroutines/otelgoroutines", "goroutines/grpcgoroutines"},
	// OpenTelemetry push, on the exporter's collection.
	{"exporter/otlp"},
	// The command's subcommands, and the commands: cputime, and the
	// exporter's, a binary of its own.
	{"internal/cli"},
	{"cmd/cputime", "cmd/cputime_exporter"},
}

// allowedAcross lists the imports within one layer that are allowed.
var allowedAcross = map[[2]string]bool{
	{"win32", ""}: true, // the Win32-shaped layer is written on the Go API
}

// Outside the layers: the benchmark module, and internal/testutil, the
// tests' helpers (the programs tests run, the test collector, the summary
// of a test run),
// which import no package of the project (TestTestUtilLeaves).
func outsideLayers(p string) bool {
	return p == "bench" || strings.HasPrefix(p, "bench/") || strings.HasPrefix(p, "internal/testutil/")
}

// The tests' helpers import no package of the project, so that any test
// may use them without reaching across the layers.
func TestTestUtilLeaves(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages with:", err)
	}
	for pkg, imports := range listImports(t, runtime.GOOS) {
		if strings.HasPrefix(pkg, "internal/testutil/") && len(imports) > 0 {
			t.Errorf("%s imports %v: a test helper imports no package of the project", pkg, imports)
		}
	}
}

const modulePath = "github.com/cputime/cputime"

func TestImportDirection(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages with:", err)
	}
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		for pkg, imports := range listImports(t, goos) {
			if outsideLayers(pkg) {
				continue
			}
			r, ok := rank[pkg]
			if !ok {
				t.Errorf("%s (GOOS=%s) is in no layer: add it to layers in layers_test.go and to docs/ARCHITECTURE.md", show(pkg), goos)
				continue
			}
			for _, imp := range imports {
				ri, ok := rank[imp]
				if !ok || allowedAcross[[2]string{pkg, imp}] {
					continue // reported as a package of its own if it is the project's
				}
				if ri >= r {
					t.Errorf("%s imports %s (GOOS=%s): against the direction of calls (layer %d imports layer %d)", show(pkg), show(imp), goos, r, ri)
				}
			}
		}
	}
}

// The library package imports the standard library and golang.org/x/sys
// alone (DESIGN §6), on every system.
func TestLibraryDependencies(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the packages with:", err)
	}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps (GOOS=%s): %v", goos, listError(err))
		}
		for dep := range strings.FieldsSeq(string(out)) {
			if dep != modulePath && !strings.HasPrefix(dep, modulePath+"/internal/") && !strings.HasPrefix(dep, "golang.org/x/sys/") {
				t.Errorf("the library package depends on %s (GOOS=%s): only the standard library and golang.org/x/sys are allowed", dep, goos)
			}
		}
	}
}

// listImports returns each package of the project's modules with the
// project's packages it imports, both relative to the module path ("" for
// the root), for GOOS goos.
func listImports(t *testing.T, goos string) map[string][]string {
	t.Helper()
	// Every module of the workspace (go.work) that is the project's.
	mods := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}")
	out, err := mods.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", listError(err))
	}
	var patterns []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 2 && (f[0] == modulePath || strings.HasPrefix(f[0], modulePath+"/")) {
			patterns = append(patterns, f[1]+"/...")
		}
	}
	cmd := exec.Command("go", append([]string{"list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, patterns...)...)
	cmd.Env = append(cmd.Environ(), "GOOS="+goos)
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("go list (GOOS=%s): %v", goos, listError(err))
	}
	pkgs := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg, ok := rel(f[0])
		if !ok {
			continue
		}
		var imps []string
		for _, imp := range f[1:] {
			if r, ok := rel(imp); ok {
				imps = append(imps, r)
			}
		}
		pkgs[pkg] = imps
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of the project (GOOS=%s): %v", len(pkgs), goos, slices.Sorted(mapKeys(pkgs)))
	}
	return pkgs
}

// rel returns p relative to the module path, and whether it is the project's.
func rel(p string) (string, bool) {
	if p == modulePath {
		return "", true
	}
	r, ok := strings.CutPrefix(p, modulePath+"/")
	if ok && path.Base(r) == "testdata" {
		return "", false
	}
	return r, ok
}

func show(p string) string {
	if p == "" {
		return "the root package"
	}
	return p
}

// listError is err with the go command's own words.
func listError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return errors.New(string(bytes.TrimSpace(ee.Stderr)))
	}
	return err
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// maxSourceLines bounds a hand-written source file (tests and generated
// code aside): past it a file holds more than one idea, and a reader
// cannot keep it in view. The root package keeps to maxRootFiles files.
const (
	maxSourceLines = 600
	maxRootFiles   = 25
)

func TestSourceFileSizes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sources are the same on every system: checked where they are built")
	}
	root := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if filepath.Dir(p) == "." {
			root++
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		head, _, _ := strings.Cut(string(b[:min(len(b), 400)]), "package ")
		if strings.Contains(head, "Code generated") {
			return nil
		}
		if n := bytes.Count(b, []byte("\n")); n > maxSourceLines {
			t.Errorf("%s: %d lines, over %d: split it by what its parts do", p, n, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if root > maxRootFiles {
		t.Errorf("the root package has %d source files, over %d", root, maxRootFiles)
	}
}
