package cputime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wineSetup is the command that prepares this machine for
// TestWindowsUnderWine, said in every skip that a missing piece causes.
const wineSetup = "bash .ci/wine-setup (as root it installs wine64 and gcc-mingw-w64-x86-64 with apt-get; it builds the ProcessPrng stand-in DLL and creates the Wine prefix)"

// TestWindowsUnderWine runs the Windows build of every package's tests
// under Wine: the same black-box suites that run on Linux, plus the
// _windows_test.go files, against the native Windows backend. It builds
// each test binary with GOOS=windows, runs it under wine, fails with the
// output of the tests that fail, and logs the tests that skipped and why,
// which is the record of what Wine could not check. It also rebuilds
// win32/testdata/vectors.c and checks that Wine still gives the results
// recorded in vectors.txt.
//
// It needs wine on PATH and a Wine prefix holding the stand-in
// bcryptprimitives.dll (Go 1.22+ Windows binaries import ProcessPrng from
// it; Wine 8 lacks it): $WINEPREFIX if set, else the one .ci/wine-setup
// creates under the user cache directory. Without them it skips, saying
// how to set them up. The Windows binaries run with TZ=UTC, for which
// vectors.txt's local-time lines hold.
func TestWindowsUnderWine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Windows tests and runs them under Wine; skipped with -short")
	}
	if raceEnabled() {
		t.Skip("the run without -race covers it: the Windows binaries are built without the race detector, so this run would repeat that one")
	}
	if runtime.GOARCH != "amd64" {
		t.Skipf("Wine runs the windows/amd64 tests on x86-64 hosts only; this is %s", runtime.GOARCH)
	}
	wine, err := exec.LookPath("wine")
	if err != nil {
		t.Skipf("wine is not on PATH; to run the Windows tests under Wine: %s", wineSetup)
	}
	prefix, err := winePrefix()
	if err != nil {
		t.Skipf("no Wine prefix: %v; set WINEPREFIX or run: %s", err, wineSetup)
	}
	dll := filepath.Join(prefix, "drive_c", "windows", "system32", "bcryptprimitives.dll")
	if _, err := os.Stat(dll); err != nil {
		setup := wineSetup
		if os.Getenv("WINEPREFIX") != "" {
			setup = "WINEPREFIX=" + prefix + " " + setup
		}
		t.Skipf("the Wine prefix %s is not ready: %v (Go's Windows binaries need this ProcessPrng stand-in); run: %s", prefix, err, setup)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH, so the Windows tests cannot be built: %v", err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	if deadline, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), deadline.Add(-10*time.Second))
	}
	// Not defer: the parallel subtests run after this function returns.
	t.Cleanup(cancel)

	winEnv := append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := command(ctx, root, winEnv, goCmd, "list", "runtime").CombinedOutput(); err != nil {
		t.Skipf("go cannot build for windows/amd64: %v\n%s", err, out)
	}

	// The root module and the goroutines modules, which the workspace
	// (go.work) joins: their Windows code is the native backend and what
	// is built on it.
	dirs, err := wineModules(ctx, root, goCmd)
	if err != nil {
		t.Fatal(err)
	}
	// The go command caches this test's result by the files it opens or
	// stats, so stat every source: a change anywhere, in a package this
	// one does not import (win32, goroutines), reruns it.
	var patterns []string
	for _, dir := range dirs {
		if err := statSources(dir); err != nil {
			t.Fatal(err)
		}
		patterns = append(patterns, dir+string(filepath.Separator)+"...")
	}

	// Every package with tests for Windows, by import path and directory.
	out, err := command(ctx, root, winEnv, goCmd, append([]string{"list", "-f",
		"{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderrOf(err))
	}
	type pkg struct{ path, dir, exe string }
	var pkgs []pkg
	bin := t.TempDir()
	for line := range strings.Lines(string(out)) {
		importPath, dir, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		// go test -c -o DIR/ names each binary for its package's last
		// element: packages that share one (the root cputime and
		// cmd/cputime) go to directories of their own.
		sub := bin
		for _, p := range pkgs {
			if path.Base(p.path) == path.Base(importPath) {
				sub = filepath.Join(bin, strconv.Itoa(len(pkgs)))
			}
		}
		pkgs = append(pkgs, pkg{importPath, dir, filepath.Join(sub, path.Base(importPath)+".test.exe")})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package with tests")
	}

	// One go command per output directory builds its packages, in
	// parallel, sharing the build cache.
	start := time.Now()
	byDir := map[string][]string{}
	for _, p := range pkgs {
		d := filepath.Dir(p.exe)
		byDir[d] = append(byDir[d], p.path)
	}
	for d, paths := range byDir {
		build := append([]string{"test", "-c", "-o", d + string(filepath.Separator)}, paths...)
		if out, err := command(ctx, root, winEnv, goCmd, build...).CombinedOutput(); err != nil {
			t.Fatalf("GOOS=windows go %s: %v\n%s", strings.Join(build, " "), err, out)
		}
	}
	t.Logf("built %d Windows test binaries in %.1fs", len(pkgs), time.Since(start).Seconds())

	// Wine cannot remove what the tests' t.TempDir made (see
	// wineTempDirFailure), so remove it here, after every subtest.
	temps, _ := filepath.Glob(filepath.Join(prefix, "drive_c", "users", "*", "Temp", "*"))
	t.Cleanup(func() {
		after, _ := filepath.Glob(filepath.Join(prefix, "drive_c", "users", "*", "Temp", "*"))
		for _, p := range after {
			if !slices.Contains(temps, p) {
				os.RemoveAll(p)
			}
		}
	})

	env := wineEnv(prefix)
	t.Run("vectors.c", func(t *testing.T) {
		t.Parallel()
		checkVectors(t, ctx, root, wine, env)
	})
	for _, p := range pkgs {
		t.Run(p.path, func(t *testing.T) {
			t.Parallel()
			runUnderWine(t, ctx, goCmd, wine, env, p.path, p.dir, p.exe)
		})
	}
}

// runUnderWine runs one Windows test binary under Wine through test2json,
// fails with the output of each failed test (or all of it, if the binary
// died outside a test), and logs each skipped test with its reason.
func runUnderWine(t *testing.T, ctx context.Context, goCmd, wine string, env []string, importPath, dir, exe string) {
	start := time.Now()
	var (
		out    []byte
		runErr error
	)
	for try := 1; ; try++ {
		cmd := command(ctx, dir, env, goCmd, "tool", "test2json", "-p", importPath,
			wine, exe, "-test.v=test2json", "-test.timeout=5m")
		out, runErr = cmd.Output()
		// Wine's own failure before the binary ran a test: its client lost
		// the wineserver, or it exited before the binary printed a word
		// (a Go test binary that starts prints at least PASS or FAIL;
		// Wine can end it with exit status 1 before that). Nothing of
		// ours ran; run it again, and say so.
		said := string(out) + stderrOf(runErr)
		silent := !printed(out)
		if runErr == nil || try == 3 || strings.Contains(said, `"Action":"run"`) || !wineClientFailure.MatchString(said) && !silent {
			break
		}
		why := wineClientFailure.FindString(said)
		if why == "" {
			why = "no output at all, " + runErr.Error()
		}
		t.Logf("try %d: Wine failed before any test ran (%s); running it again", try, why)
	}

	type event struct {
		Action string
		Test   string
		Output string
	}
	var (
		outputs             = map[string]*strings.Builder{} // by test
		all                 strings.Builder
		passed              int
		skipped, failed     []string
		pkgFailed, finished bool
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			all.WriteString(sc.Text() + "\n")
			continue
		}
		switch e.Action {
		case "output":
			all.WriteString(e.Output)
			if e.Test != "" {
				if outputs[e.Test] == nil {
					outputs[e.Test] = new(strings.Builder)
				}
				outputs[e.Test].WriteString(e.Output)
			}
		case "pass":
			if e.Test != "" {
				passed++
			} else {
				finished = true
			}
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, e.Test)
			} else {
				finished = true
			}
		case "fail":
			if e.Test != "" {
				failed = append(failed, e.Test)
			} else {
				pkgFailed, finished = true, true
			}
		}
	}
	// Sort the failures into ours and Wine's (see wineTempDirFailure).
	var genuine, excused []string
	for _, name := range failed {
		own := meaningful(outputs[name])
		switch {
		case len(own) > 0 && !slices.ContainsFunc(own, func(l string) bool { return !wineTempDirFailure.MatchString(l) }):
			excused = append(excused, name)
		case len(own) == 0 && slices.ContainsFunc(failed, func(sub string) bool { return strings.HasPrefix(sub, name+"/") }):
			// Failed because a subtest did; that one is reported or excused.
		default:
			genuine = append(genuine, name)
		}
	}
	t.Logf("%d passed, %d skipped, %d failed under Wine in %.1fs", passed, len(skipped), len(failed), time.Since(start).Seconds())
	for _, name := range skipped {
		t.Logf("SKIP %s: %s", name, strings.Join(meaningful(outputs[name]), " / "))
	}
	for _, name := range excused {
		t.Logf("WINE %s failed only in t.TempDir's cleanup, which Wine 8 cannot do (not counted): %s",
			name, strings.Join(meaningful(outputs[name]), " / "))
	}
	for _, name := range genuine {
		t.Errorf("FAIL %s under Wine:\n%s", name, outputs[name])
	}
	switch {
	case len(failed) == 0 && (runErr != nil || pkgFailed || !finished):
		t.Errorf("the Windows test binary of %s failed under Wine outside any test (%v); its output:\n%s%s",
			importPath, runErr, all.String(), stderrOf(runErr))
	case len(failed) > 0 && !pkgFailed:
		t.Errorf("the Windows test binary of %s did not finish under Wine (%v); its output:\n%s%s",
			importPath, runErr, all.String(), stderrOf(runErr))
	}
}

// printed reports whether a test binary's test2json stream holds output of
// the binary's own: test2json's note of the exit status ("test2json: exit
// status 1", which it adds when the binary fails) is not: a binary that
// exits under Wine without a word leaves only that note.
func printed(stream []byte) bool {
	for line := range bytes.Lines(stream) {
		var e struct{ Action, Output string }
		if json.Unmarshal(line, &e) == nil && e.Action == "output" && !test2jsonExit.MatchString(e.Output) {
			return true
		}
	}
	return false
}

// test2jsonExit matches test2json's own note of a failed binary's exit.
var test2jsonExit = regexp.MustCompile(`^test2json: exit status \d+\n?$`)

// wineClientFailure matches Wine's client losing its wineserver.
var wineClientFailure = regexp.MustCompile(`wine client error:[^\n"]*`)

// wineTempDirFailure matches the one failure under Wine that is Wine's and
// not the test's: removing t.TempDir at the end of a test. Go 1.25+ deletes
// files with NtSetInformationFile(FileDispositionInformationEx) and falls
// back to the older call only on the statuses Windows versions without it
// return (STATUS_INVALID_INFO_CLASS, _INVALID_PARAMETER, _NOT_SUPPORTED);
// Wine 8 answers STATUS_NOT_IMPLEMENTED, which Go reports as "Invalid
// function." (ERROR_INVALID_FUNCTION), so the directory stays behind and
// the test is marked failed after it has passed.
var wineTempDirFailure = regexp.MustCompile(`^\S+: TempDir RemoveAll cleanup: .*: Invalid function\.$`)

// meaningful returns what a test logged, without the framing lines of -v
// and test2json ("=== RUN", "--- SKIP: ...").
func meaningful(out *strings.Builder) []string {
	if out == nil {
		return nil
	}
	var lines []string
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- ") {
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// checkVectors rebuilds win32/testdata/vectors.c with MinGW, runs it under
// Wine and checks its output against the Wine results in vectors.txt (the
// "wine ->" field where Wine differs from Windows, else the expected
// result), so the file cannot silently go stale.
func checkVectors(t *testing.T, ctx context.Context, root, wine string, env []string) {
	cc, err := exec.LookPath("x86_64-w64-mingw32-gcc")
	if err != nil {
		t.Skipf("x86_64-w64-mingw32-gcc is not on PATH, so vectors.c cannot be rebuilt; run: %s", wineSetup)
	}
	testdata := filepath.Join(root, "win32", "testdata")
	exe := filepath.Join(t.TempDir(), "vectors.exe")
	if out, err := command(ctx, testdata, os.Environ(), cc, "-O2", "-o", exe, "vectors.c").CombinedOutput(); err != nil {
		t.Fatalf("building vectors.c: %v\n%s", err, out)
	}
	got, err := command(ctx, testdata, env, wine, exe).Output()
	if err != nil {
		t.Fatalf("running vectors.exe under Wine: %v\n%s", err, stderrOf(err))
	}
	text, err := os.ReadFile(filepath.Join(testdata, "vectors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, " | ")
		if len(fields) == 3 {
			call, _, _ := strings.Cut(fields[0], " -> ")
			line = call + " -> " + strings.TrimPrefix(fields[1], "wine -> ")
		}
		want = append(want, line)
	}
	var have []string
	for line := range strings.Lines(string(got)) {
		have = append(have, strings.TrimRight(line, "\r\n"))
	}
	for i := range max(len(want), len(have)) {
		var w, h string
		if i < len(want) {
			w = want[i]
		}
		if i < len(have) {
			h = have[i]
		}
		if w != h {
			t.Errorf("vectors.c under Wine, line %d:\n got: %s\nwant: %s (from vectors.txt)", i+1, h, w)
		}
	}
	if !t.Failed() {
		t.Logf("vectors.c under Wine gives the %d results vectors.txt records", len(have))
	}
}

// winePrefix returns $WINEPREFIX, or the prefix .ci/wine-setup creates by
// default: the user cache directory's cputime/wine.
func winePrefix() (string, error) {
	if p := os.Getenv("WINEPREFIX"); p != "" {
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "cputime", "wine"), nil
}

// wineEnv is the environment of the Windows processes: the prefix, no Wine
// debug output, no Mono or Gecko prompts, and the time zone fixed to UTC.
func wineEnv(prefix string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, name := range []string{"WINEPREFIX=", "WINEDEBUG=", "WINEDLLOVERRIDES=", "TZ="} {
			if strings.HasPrefix(kv, name) {
				return true
			}
		}
		return false
	})
	return append(env, "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree=;mshtml=", "TZ=UTC")
}

func command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// moduleRoot returns the directory holding go.mod, above the current one.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the current directory")
		}
		dir = parent
	}
}

// wineModules returns the directories of the modules whose Windows tests
// TestWindowsUnderWine runs: the root module, and the goroutines module and
// those nested in it, as the workspace lists them.
func wineModules(ctx context.Context, root, goCmd string) ([]string, error) {
	out, err := command(ctx, root, os.Environ(), goCmd, "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %v\n%s", err, stderrOf(err))
	}
	dirs := []string{root}
	for line := range strings.Lines(string(out)) {
		mod, dir, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && (mod == modulePath+"/goroutines" || strings.HasPrefix(mod, modulePath+"/goroutines/")) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 1 {
		return nil, fmt.Errorf("go list -m lists no goroutines module: is %s missing from go.work?", modulePath+"/goroutines")
	}
	return dirs, nil
}

// statSources stats every file of the module (not nested modules or hidden
// directories), which puts them in the go command's test cache key.
func statSources(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root {
				name := d.Name()
				if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		_, err = os.Lstat(p)
		return err
	})
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// A stream with only test2json's exit note is silent; any output of the
// binary's own is not (what runUnderWine's retry decides on).
func TestPrinted(t *testing.T) {
	for stream, want := range map[string]bool{
		"": false,
		`{"Action":"start","Package":"x"}` + "\n": false,
		`{"Action":"start","Package":"x"}` + "\n" + `{"Action":"output","Package":"x","Output":"test2json: exit status 1\n"}` + "\n" + `{"Action":"fail","Package":"x","Elapsed":0.1}` + "\n": false,
		`{"Action":"output","Package":"x","Output":"panic: boom\n"}` + "\n": true,
		`{"Action":"output","Package":"x","Output":"PASS\n"}` + "\n":        true,
	} {
		if got := printed([]byte(stream)); got != want {
			t.Errorf("printed(%q) = %v, want %v", stream, got, want)
		}
	}
}
