package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirNames lists dir as the file system has it.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func fillWith(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// An existing file stays as it was until the write is whole, then is
// replaced at once; nothing else is left in its directory.
func TestOutFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := createOutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "OLD\n" {
		t.Errorf("opened for writing: %s holds %q, want the old file untouched", path, b)
	}
	if err := o.write(fillWith("NEW\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "NEW\n" {
		t.Errorf("written: %s holds %q, want NEW", path, b)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"rec.json"}) {
		t.Errorf("directory holds %q, want rec.json alone", names)
	}
}

// A write that fails leaves the old file whole and removes only the
// temporary file; the error names the path the user gave and wraps the
// cause.
func TestOutFileFailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := createOutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("disk on fire")
	err = o.write(func(w io.Writer) error {
		fmt.Fprint(w, "half a rec")
		return cause
	})
	if !errors.Is(err, cause) || err.Error() != "writing "+path+": disk on fire" {
		t.Errorf("error %q, want it to name %s and wrap the cause", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "OLD\n" {
		t.Errorf("%s holds %q after a failed write, want the old file", path, b)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"rec.json"}) {
		t.Errorf("directory holds %q, want rec.json alone", names)
	}
}

// A file that is not written (CMD could not run) leaves no trace: no
// file at a new path, nothing beside it.
func TestOutFileDiscardLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.json")
	o, err := createOutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); len(names) != 1 || !strings.HasPrefix(names[0], "new.json.cputime-") {
		t.Errorf("while open, directory holds %q, want the temporary file alone", names)
	}
	o.discard()
	o.discard()
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("discarded: directory holds %q, want nothing", names)
	}
}

// A path that cannot be created fails at once, naming it, with the
// file system's cause for errors.Is.
func TestOutFileMissingDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "rec.json")
	_, err := createOutFile(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), ".cputime-") {
		t.Errorf("createOutFile(%s): %v, want fs.ErrNotExist naming the path", path, err)
	}
}

// A name that ends in a separator is a directory's: refused, as os.Create
// refuses it, with nothing made anywhere (a temporary file named after a
// cut of the name, in another directory, was one way to get it wrong).
func TestOutFileTrailingSeparator(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := createOutFile("newname" + string(filepath.Separator)); err == nil {
		t.Error("createOutFile(newname/): no error")
	}
	if names := dirNames(t, dir); len(names) > 0 {
		t.Errorf("directory holds %q, want nothing", names)
	}
}
