package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// skipWithoutRecording skips a --trace or --timeline test where run cannot
// record the tree (the drawings need it).
func skipWithoutRecording(t *testing.T, status int, stderr string) {
	t.Helper()
	if status == exitFailed && strings.Contains(stderr, "--tree: ") {
		t.Skipf("no recording here: %s", stderr)
	}
}

// run's outputs onto a device that refuses the write (/dev/full: ENOSPC)
// once deleted the path, device node included, and -o lost the record
// with exit 1. Now the path stays what it was (checked with lstat, and the
// device by its numbers), the record reaches stderr, the error names the
// path and its cause, and run exits with CMD's status. As root the test
// also writes onto a device node of its own, the reproducer's case.
func TestRunOutputDevFullKeepsPath(t *testing.T) {
	full, err := os.Stat("/dev/full")
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	dir := t.TempDir()
	// Each path and how to make it again (where an old run removed it).
	link, node := filepath.Join(dir, "link"), filepath.Join(dir, "node")
	rdev := full.Sys().(*syscall.Stat_t).Rdev
	makes := map[string]func() error{link: func() error { return os.Symlink("/dev/full", link) }}
	if os.Geteuid() == 0 {
		makes[node] = func() error { return unix.Mknod(node, unix.S_IFCHR|0o666, int(rdev)) }
	}
	var paths []string
	for path, make := range makes {
		if err := make(); err != nil {
			t.Logf("making %s: %v: not tested", path, err)
			continue
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		before, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, opt := range []string{"-o", "--trace", "--timeline"} {
			_, stderr, status := runCLI(t, System{}, "run", opt, path, "--", "sh", "-c", "exit 7")
			if opt != "-o" {
				skipWithoutRecording(t, status, stderr)
			}
			if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s %s: the path is gone or changed: %v", opt, path, err)
				os.Remove(path)
				makes[path]()
			}
			if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Rdev != rdev {
				t.Errorf("%s %s: no longer /dev/full: %v", opt, path, err)
			}
			if status != 7 {
				t.Errorf("%s %s: status %d, want CMD's 7", opt, path, status)
			}
			if !strings.Contains(stderr, "writing "+path+": no space left on device") {
				t.Errorf("%s %s: stderr does not name the path and the cause: %s", opt, path, stderr)
			}
			if !strings.Contains(stderr, "Exit status: 7") {
				t.Errorf("%s %s: the record is not on stderr: %s", opt, path, stderr)
			}
		}
	}
	if names := dirNames(t, dir); len(names) != len(paths) {
		t.Errorf("directory holds %q, want %d entries", names, len(paths))
	}
}

// -o onto an existing record where the file system refuses the new one
// cut or deleted the old record and lost the new. A file size limit of 0
// on run (RLIMIT_FSIZE, lowered by CMD, which then exits 7) makes its
// every write to a file fail with EFBIG, without root; as root a full tmpfs gives
// the real ENOSPC too. The old record must stay whole, the new one reach
// stderr, and run exit with CMD's status.
func TestRunOutputFullFSKeepsOldFile(t *testing.T) {
	const old = "OLD-RECORD\n"
	check := func(t *testing.T, path string, status int, stderr string, cause error) {
		t.Helper()
		if b, err := os.ReadFile(path); string(b) != old {
			t.Errorf("old record now %q, %v; want it untouched", b, err)
		}
		if status != 7 {
			t.Errorf("status %d, want CMD's 7", status)
		}
		head, rec, _ := strings.Cut(stderr, "\n")
		if want := "cputime: writing " + path + ": " + cause.Error() + "; the record follows"; head != want {
			t.Errorf("first line %q, want %q", head, want)
		}
		var r runJSON
		if err := json.Unmarshal([]byte(rec), &r); err != nil || r.Exit == nil || r.Exit.Code == nil || *r.Exit.Code != 7 {
			t.Errorf("the record on stderr: %v: %s", err, rec)
		}
		if names := dirNames(t, filepath.Dir(path)); slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, ".cputime-") }) {
			t.Errorf("temporary file left behind: %q", names)
		}
	}
	t.Run("fsize", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "old.json")
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		// CMD lowers run's limit once run has started it: the recorder
		// writes a file of its own at the start.
		c := helperCmd("cli", "run", "--json", "-o", path, "--", "env", cliHelperEnv+"=fsize0", os.Args[0], "-test.run=^$")
		var stderr strings.Builder
		c.Stderr = &stderr
		c.Run()
		check(t, path, c.ProcessState.ExitCode(), stderr.String(), syscall.EFBIG)
	})
	t.Run("tmpfs", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a tmpfs needs root")
		}
		dir := t.TempDir()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
			t.Skipf("mounting a tmpfs: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		path := filepath.Join(dir, "old.json")
		if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		// Fill it: a write of a page or more fails with ENOSPC.
		fill, err := os.Create(filepath.Join(dir, "fill"))
		if err != nil {
			t.Fatal(err)
		}
		page := make([]byte, 4096)
		for range 64 {
			if _, err = fill.Write(page); err != nil {
				break
			}
		}
		fill.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
		}
		_, stderr, status := runCLI(t, System{}, "run", "--json", "-o", path, "--", "sh", "-c", "exit 7")
		os.Remove(filepath.Join(dir, "fill"))
		check(t, path, status, stderr, syscall.ENOSPC)
	})
}

// With stderr a pipe whose reader is gone, writing the record raised
// SIGPIPE and run died of it (status 141 in a shell), hiding CMD's status.
// Now the write fails with EPIPE and run exits with CMD's status, also
// where an output fails too and its error goes to that same stderr.
func TestRunClosedStderrKeepsStatus(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--", "sh", "-c", "exit 8"},
		{"run", "-o", "/dev/full", "--", "sh", "-c", "exit 8"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		c := helperCmd("cli", args...)
		c.Stderr = w
		err = c.Run()
		w.Close()
		ws := c.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() || ws.ExitStatus() != 8 {
			t.Errorf("%q with stderr a closed pipe: %v, want CMD's exit status 8", args, err)
		}
	}
}

// A path option took the next argument as its file name even where it
// was an option: "-o -- true" wrote a file named "--". Now a value that
// begins with - is a usage error naming the option, and no file is made,
// unless given with = (explicit).
func TestRunPathOptionRefusesFlag(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-o", "--", "true"},
		{"--output", "--json", "--", "true"},
		{"--trace", "--json", "--", "true"},
		{"--timeline", "-x", "--", "true"},
		{"--trace=", "--", "true"},
	} {
		c := helperCmd("cli", append([]string{"run"}, args...)...)
		c.Dir = dir
		var stderr strings.Builder
		c.Stderr = &stderr
		c.Run()
		first, _, _ := strings.Cut(stderr.String(), "\n")
		opt, _, _ := strings.Cut(args[0], "=")
		if code := c.ProcessState.ExitCode(); code != exitUsage || !strings.HasPrefix(first, "cputime: run: "+opt+" needs a file name") {
			t.Errorf("run %q: status %d, %q; want a usage error naming %s", args, code, first, opt)
		}
		if names := dirNames(t, dir); len(names) > 0 {
			t.Errorf("run %q created %q", args, names)
			for _, n := range names {
				os.Remove(filepath.Join(dir, n))
			}
		}
	}
	// Given with =, a name that begins with - is taken as it is.
	c := helperCmd("cli", "run", "-o=-x", "--output=--json", "--", "true")
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("run -o=-x --output=--json: %v: %s", err, out)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"--json"}) {
		t.Errorf("run -o=-x --output=--json: directory holds %q, want --json (the last -o)", names)
	}
}

// An existing output stays as it was while CMD runs (CMD may read it: a
// build that compares with its last record) and a path that did not exist
// is not created where CMD could not run.
func TestRunOutputUntouchedUntilEnd(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.txt")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := runCLI(t, System{}, "run", "-o", path, "--", "cat", path)
	if status != 0 || stdout != "OLD\n" {
		t.Errorf("CMD read %q from the output (status %d, %s), want the old file", stdout, status, stderr)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "Exit status: 0") {
		t.Errorf("after the run, %s holds %q, want the record", path, b)
	}
	missing := filepath.Join(dir, "new.txt")
	_, _, status = runCLI(t, System{}, "run", "-o", missing, "--", filepath.Join(dir, "no-such-command"))
	if _, err := os.Lstat(missing); status != exitNotFound || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CMD not found: status %d, %s: %v; want 127 and no file", status, missing, err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"rec.txt"}) {
		t.Errorf("directory holds %q, want rec.txt alone", names)
	}
}
