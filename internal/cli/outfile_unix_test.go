//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// The replacement keeps the old file's mode, whatever the umask.
func TestOutFileKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o751); err != nil {
		t.Fatal(err)
	}
	o, err := createOutFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.write(fillWith("NEW\n")); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o751 {
		t.Errorf("replaced file mode %o, want the old 751", st.Mode&0o7777)
	}
}

// A symbolic link stays a link: the file it names is the one replaced.
func TestOutFileFollowsLink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	o, err := createOutFile(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.write(fillWith("NEW\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s after the write: %v, %v; want it still a link", link, fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "NEW\n" {
		t.Errorf("%s holds %q, want NEW", target, b)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"link", "target"}) {
		t.Errorf("directory holds %q", names)
	}
}

// A file the user may not write is refused, as os.Create refuses it, not
// replaced behind its mode's back.
func TestOutFileReadOnlyRefused(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any file: run as another user")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ro.json")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := createOutFile(path); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("createOutFile(read-only file): %v, want fs.ErrPermission", err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"ro.json"}) {
		t.Errorf("directory holds %q", names)
	}
}

// A device is written in place, and a write it refuses (/dev/full:
// ENOSPC) leaves it, and a link to it, where they were.
func TestOutFileDeviceInPlace(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	link := filepath.Join(t.TempDir(), "full")
	if err := os.Symlink("/dev/full", link); err != nil {
		t.Fatal(err)
	}
	o, err := createOutFile(link)
	if err != nil {
		t.Fatal(err)
	}
	if o.dest != "" {
		t.Errorf("/dev/full: replaced through %s, want written in place", o.dest)
	}
	if err := o.write(fillWith("x")); !errors.Is(err, syscall.ENOSPC) || err.Error() != "writing "+link+": no space left on device" {
		t.Errorf("writing /dev/full: %v, want ENOSPC naming %s", err, link)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s after the failed write: %v", link, err)
	}
	if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("/dev/full after the failed write: %v, %v", fi, err)
	}
}

// A link into /proc/self/fd (/dev/stdout, /dev/fd/N) names an open file,
// not a name to replace: it is written in place and appended to, so that
// what the file held (a shell's 2>>log) stays.
func TestOutFileFDLinkInPlace(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("OLD\n"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/fd/" + strconv.Itoa(int(f.Fd())), "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("no %s here: %v", path, err)
		}
		o, err := createOutFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if o.dest != "" {
			t.Errorf("%s: replaced through %s, want written in place", path, o.dest)
		}
		if err := o.write(fillWith(path + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	want := "OLD\n/dev/fd/" + strconv.Itoa(int(f.Fd())) + "\n/proc/self/fd/" + strconv.Itoa(int(f.Fd())) + "\n"
	if b, _ := os.ReadFile(f.Name()); string(b) != want {
		t.Errorf("the file holds %q, want %q", b, want)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"log"}) {
		t.Errorf("directory holds %q", names)
	}
}

// A file that may be written in a directory that may not is refused
// before CMD starts (it cannot be replaced whole), saying why, and stays
// as it was.
func TestOutFileDirReadOnlyRefused(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any directory: run as another user")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(path, []byte("OLD\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	_, err := createOutFile(path)
	if !errors.Is(err, fs.ErrPermission) || err.Error() != "creating a file beside "+path+": permission denied" {
		t.Errorf("createOutFile in a read-only directory: %v, want fs.ErrPermission saying why", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "OLD\n" {
		t.Errorf("%s now %q", path, b)
	}
}
