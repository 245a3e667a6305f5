package procfs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// DefaultRoot is where the proc file system is mounted on Linux.
const DefaultRoot = "/proc"

var (
	// ErrFileParse is wrapped by every error reporting malformed content of
	// a proc file.
	ErrFileParse = errors.New("malformed proc file")

	// ErrInvalidID is wrapped by every error reporting a process or thread
	// id that is not a positive decimal fitting in an int32.
	ErrInvalidID = errors.New("invalid id")
)

// FS is a proc file system mounted at a root directory. The zero FS reads
// [DefaultRoot].
type FS struct {
	root string
}

// NewFS returns an FS rooted at root; "" means [DefaultRoot].
func NewFS(root string) FS {
	return FS{root: root}
}

// Root returns the mount point of fs.
func (fs FS) Root() string {
	if fs.root == "" {
		return DefaultRoot
	}
	return fs.root
}

// Path joins elem to the mount point of fs, as filepath.Join does.
func (fs FS) Path(elem ...string) string {
	return filepath.Join(append([]string{fs.Root()}, elem...)...)
}

// Initial buffer sizes for whole-file reads: a stat line is about 300 bytes,
// status about 1.5 KiB, /proc/stat grows with the number of CPUs and
// interrupts. ReadFileInto grows the buffer when a guess is too small.
const (
	statBufSize    = 1024
	statusBufSize  = 4096
	sysStatBufSize = 8192
	minReadSize    = 512
)

// ReadFileInto reads the whole file at path into buf, growing it only if the
// file does not fit in cap(buf), and returns the filled slice. It reads from
// a freshly opened file with one sequential read loop, as the kernel expects
// for seq_file-backed proc files: the content a read returns is generated
// once, at offset 0, and later reads continue from that same snapshot.
//
// Errors from the operating system are *os.PathError values, so
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ESRCH) work.
//
// Only a regular file is read (a FIFO or a device under a root that is not
// the real /proc would block or never end), and at most maxFileSize bytes
// of it: beyond that the error wraps [ErrFileParse].
func ReadFileInto(path string, buf []byte) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return buf[:0], err
	} else if !fi.Mode().IsRegular() {
		return buf[:0], fmt.Errorf("%w: %s is not a regular file (%v)", ErrFileParse, path, fi.Mode().Type())
	}
	if cap(buf) < minReadSize {
		buf = make([]byte, 0, minReadSize)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxFileSize {
				return buf, fmt.Errorf("%w: %s is larger than %d bytes", ErrFileParse, path, maxFileSize)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// maxFileSize bounds what ReadFileInto reads: far above any proc file it
// is used for (/proc/stat of a 4096-CPU machine is under 1 MiB).
const maxFileSize = 16 << 20

// ParseID parses a process or thread id: a positive decimal without sign or
// leading zeros that fits in an int32 (the kernel's pid_t), as found in the
// names of the directories of /proc. Any other string gives an error wrapping
// [ErrInvalidID].
func ParseID(s string) (int, error) {
	id, ok := parseID(s)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrInvalidID, clip([]byte(s)))
	}
	return id, nil
}

// parseID is ParseID without the error, for scanning directories where most
// non-numeric names are expected.
func parseID(s string) (int, bool) {
	if len(s) == 0 || len(s) > 10 || s[0] == '0' {
		return 0, false
	}
	var n uint64 // ten digits cannot overflow a uint64, but can an int32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// checkID rejects ids that cannot name a process or thread before they
// become a path.
func checkID(what string, id int) error {
	if id <= 0 || id > math.MaxInt32 {
		return fmt.Errorf("%w: %s %d", ErrInvalidID, what, id)
	}
	return nil
}

// PIDs returns the ids of the processes under the mount point, sorted
// ascending. Entries whose names are not ids (self, sys, stat, ...) are
// skipped.
func (fs FS) PIDs() ([]int, error) {
	ids, err := readIDs(fs.Root())
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	return ids, nil
}

// TIDs returns the ids of the threads of process pid, sorted ascending. A
// thread listed may be gone by the time it is read.
func (fs FS) TIDs(pid int) ([]int, error) {
	if err := checkID("process", pid); err != nil {
		return nil, fmt.Errorf("listing threads: %w", err)
	}
	ids, err := readIDs(fs.Path(strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, fmt.Errorf("listing threads of process %d: %w", pid, err)
	}
	return ids, nil
}

// LiveTIDs returns, sorted ascending, the ids of the threads of process
// pid, every thread alive throughout the call among them. One listing of
// the task directory (TIDs) can leave such a thread out: the kernel
// resumes each getdents batch by position, and a thread that exits while
// the listing runs shifts the positions (fs/proc/base.c, next_tid and
// first_tid). When a listing holds every thread of the one before it,
// none of those exited while the one before ran, so nothing shifted that
// one. LiveTIDs lists until that holds, at most maxListings times, and
// returns every thread the listings saw: a thread listed may be gone by
// the time it is read, as with TIDs.
func (fs FS) LiveTIDs(pid int) ([]int, error) {
	var all, prev []int
	for range maxListings {
		ids, err := fs.TIDs(pid)
		if err != nil {
			return nil, err
		}
		all = append(all, ids...)
		held := prev != nil
		for _, id := range prev {
			if _, found := slices.BinarySearch(ids, id); !found {
				held = false
				break
			}
		}
		if held {
			break
		}
		prev = ids
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// maxListings bounds LiveTIDs for a process whose threads come and go
// without pause.
const maxListings = 8

func readIDs(dir string) ([]int, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(names))
	for _, name := range names {
		if id, ok := parseID(name); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// parseError returns an error wrapping ErrFileParse that names the file kind
// and what is wrong.
func parseError(file, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrFileParse, file, fmt.Sprintf(format, args...))
}

// clip shortens b for an error message, so a fuzzed megabyte of input does
// not end up in one.
func clip(b []byte) string {
	const max = 40
	if len(b) > max {
		b = b[:max]
	}
	// A copy: an error must not keep the caller's buffer alive, or every
	// buffer passed to a parser would escape to the heap.
	return string(b)
}

// isSpace reports whether c is ASCII white space, the set strings.Fields
// splits on within ASCII.
func isSpace(c byte) bool {
	return asciiSpace[c]
}

// asciiSpace is a table because isSpace runs for every byte of a stat line.
var asciiSpace = [256]bool{' ': true, '\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

// nextField returns the first run of non-space bytes in b and what follows
// it; tok is nil when b holds only white space.
func nextField(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	return b[i:j], b[j:]
}

// parseUint parses an unsigned decimal (digits only) into a uint64, failing
// on overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	significant := 0 // digits since the first non-zero one
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if significant < 19 { // 19 digits never overflow a uint64: no check needed
			n = n*10 + d
			if n != 0 {
				significant++
			}
			continue
		}
		hi, lo := bits.Mul64(n, 10)
		lo += d
		if hi != 0 || lo < d {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// parseInt parses a decimal with an optional '-' into an int64.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to itself: MinInt64
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// parseSmall parses an unsigned decimal that must fit in an int32, such as
// an id, a CPU number or a thread count.
func parseSmall(b []byte) (int, bool) {
	u, ok := parseUint(b)
	if !ok || u > math.MaxInt32 {
		return 0, false
	}
	return int(u), true
}

// isInt reports whether b is a decimal with an optional '-', the syntax of
// every numeric field the kernel prints in these files.
func isInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
