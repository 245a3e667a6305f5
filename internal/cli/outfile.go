package cli

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// An outFile is a file that run writes (-o, --trace, --timeline). It is
// opened before CMD starts, so that a path that cannot take it fails before
// the work rather than after, and written once, at the end.
//
// A regular file, or a name not yet taken, is written to a temporary file
// beside it (same directory, created with O_EXCL, the old file's mode and
// owner) that is renamed over it once its whole content is written and
// synced: the path then holds either the old file, untouched, or the new
// one, whole. The temporary file is the check that the file can be created
// (the exact operation, where a look at the directory's permissions would
// miss a read-only mount, a full quota or an ACL), and it is the one file
// cputime ever removes. Anything else (a device, a FIFO, a terminal,
// /dev/stdout and the other links into /proc/self/fd) is written in place,
// appended to, and never removed or renamed over: its name is not ours.
type outFile struct {
	path string   // as the user gave it: the name in every error
	f    *os.File // the temporary file, or the path's own file
	dest string   // what f is renamed over; "" where f is written in place
}

// tempSuffix marks run's temporary files: NAME.cputime-RANDOM.tmp beside
// NAME, left behind only where run was killed before it could finish.
const tempSuffix = ".tmp"

// createOutFile opens path for a write to come. A symbolic link is followed
// to the file it names, which is the file replaced; the link stays. Its
// errors are *fs.PathError naming path, for errors.Is (fs.ErrNotExist,
// fs.ErrPermission).
func createOutFile(path string) (*outFile, error) {
	if path == "" {
		return nil, &fs.PathError{Op: "creating", Path: path, Err: fs.ErrInvalid}
	}
	dest, inPlace, err := followLinks(path)
	if err != nil {
		return nil, &fs.PathError{Op: "creating", Path: path, Err: err}
	}
	old, err := os.Stat(dest)
	switch {
	case err == nil && (inPlace || !old.Mode().IsRegular()):
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return nil, pathError("opening", path, err)
		}
		return &outFile{path: path, f: f}, nil
	case err == nil:
		// Replaced only where it could have been written: a read-only
		// file stays as os.Create would leave it. Opening without O_TRUNC
		// changes nothing.
		f, err := os.OpenFile(dest, os.O_WRONLY, 0)
		if err != nil {
			return nil, pathError("opening", path, err)
		}
		f.Close()
	case inPlace || !errors.Is(err, fs.ErrNotExist):
		return nil, pathError("opening", path, err)
	default:
		old = nil
	}
	f, err := createTemp(dest, old)
	if err != nil && old != nil {
		// The file is writable, its directory is not: said so, since
		// the file's own mode would not explain the refusal.
		return nil, pathError("creating a file beside", path, err)
	}
	if err != nil {
		return nil, pathError("creating", path, err)
	}
	return &outFile{path: path, f: f, dest: dest}, nil
}

// followLinks follows path's last element while it is a symbolic link and
// returns the file it names. inPlace reports a path into /proc or /dev/fd
// (/dev/stdout is a link to /proc/self/fd/1): its link is an open file, to
// be written as it is, never a name to replace.
func followLinks(path string) (dest string, inPlace bool, err error) {
	dest = path
	for range 40 { // the kernel's MAXSYMLINKS
		if abs, err := filepath.Abs(dest); err == nil && (strings.HasPrefix(abs, "/proc/") || strings.HasPrefix(abs, "/dev/fd/")) {
			return dest, true, nil
		}
		target, err := os.Readlink(dest)
		if err != nil {
			return dest, false, nil // not a link (or not there): dest is the file
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's directory, taken as it is: a
			// lexical clean of dir/.. could name another directory
			// than the kernel's walk does where dir is a link.
			dir, _ := filepath.Split(dest)
			target = dir + target
		}
		dest = target
	}
	return "", false, syscall.ELOOP
}

// createTemp creates the temporary file that replaces dest: beside it, so
// that the rename stays within one file system, with O_EXCL, so that it is
// never a file someone else made. A new file gets the mode os.Create gives
// (0666 less the umask); one that replaces old gets old's mode and owner.
func createTemp(dest string, old fs.FileInfo) (*os.File, error) {
	dir, base := filepath.Split(dest)
	if base == "" {
		return nil, syscall.EISDIR // "name/", as open(2) says it
	}
	if len(base) > 200 { // room for the suffix within NAME_MAX (255)
		base = base[:200]
	}
	perm := fs.FileMode(0o666)
	if old != nil {
		perm = 0o600 // until it has old's mode: no wider meanwhile
	}
	var err error
	for range 100 {
		name := dir + base + ".cputime-" + strconv.FormatUint(uint64(rand.Uint32()), 36) + tempSuffix
		var f *os.File
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if old != nil {
			// Best effort, as sed -i does: a file system without modes
			// (vfat) refuses the chmod, and only root may give a file
			// away. The file then stays 0600 and ours: narrower, never
			// wider, than the old one.
			f.Chmod(old.Mode().Perm())
			keepOwner(f, old)
		}
		return f, nil
	}
	return nil, err
}

// write fills the file with fill and closes it. A temporary file is synced
// and renamed into place, or removed on any error, which leaves the path as
// it was; a file written in place is only closed. The error names the path
// as the user gave it, with the cause.
func (o *outFile) write(fill func(io.Writer) error) error {
	err := fill(o.f)
	if o.dest != "" && err == nil {
		// A file system that cannot sync (some FUSE ones: EINVAL) still
		// gets the rename; any other failure means the data may not be
		// there.
		if serr := o.f.Sync(); serr != nil && !errors.Is(serr, syscall.EINVAL) {
			err = serr
		}
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if o.dest != "" {
		if err == nil {
			err = os.Rename(o.f.Name(), o.dest)
		}
		if err != nil {
			os.Remove(o.f.Name())
		}
	}
	o.f = nil
	if err != nil {
		return pathError("writing", o.path, err)
	}
	return nil
}

// discard closes a file that will not be written, removing its temporary
// file; the path stays as it was. After write it does nothing.
func (o *outFile) discard() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Close()
	if o.dest != "" {
		os.Remove(o.f.Name())
	}
	o.f = nil
}

// pathError is err as an *fs.PathError for op on path: an error from the
// temporary file (or a link's target) names the path the user gave.
func pathError(op, path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
