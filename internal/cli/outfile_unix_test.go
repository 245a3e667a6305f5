//go:build unix

package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
// ENOSPC) leaves it, and a link to it, where they were. /dev/stdout, a
// link into /proc/self/fd, is written in place too, whatever fd 1 is.
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
	if _, err := os.Stat("/dev/stdout"); err == nil {
		o, err := createOutFile("/dev/stdout")
		if err != nil {
			t.Fatal(err)
		}
		if o.dest != "" {
			t.Errorf("/dev/stdout: replaced through %s, want written in place", o.dest)
		}
		o.discard()
	}
}
