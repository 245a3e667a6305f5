package procfs

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

func openFile(path string) (*File, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := &File{fd: fd, path: path}
	// Like os.File: a File dropped without Close does not leak its fd.
	f.cleanup = runtime.AddCleanup(f, func(fd int) { unix.Close(fd) }, fd)
	return f, nil
}

func (f *File) readAt0(buf []byte) (int, error) {
	if f.fd < 0 {
		return 0, &os.PathError{Op: "pread", Path: f.path, Err: os.ErrClosed}
	}
	for {
		n, err := unix.Pread(f.fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		// f must stay reachable until pread returns, or the cleanup
		// could close the fd under it.
		runtime.KeepAlive(f)
		if err != nil {
			return 0, &os.PathError{Op: "pread", Path: f.path, Err: err}
		}
		if n >= len(buf) {
			return n, fmt.Errorf("reading %s: %d-byte buffer filled: %w", f.path, len(buf), io.ErrShortBuffer)
		}
		return n, nil
	}
}

func (f *File) close() error {
	if f.fd < 0 {
		return &os.PathError{Op: "close", Path: f.path, Err: os.ErrClosed}
	}
	fd := f.fd
	f.fd = -1
	f.cleanup.Stop()
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}

// ReadFileAt reads the whole of the small file name, relative to the open
// directory dirfd (unix.AT_FDCWD for the working directory or an absolute
// name), into buf, and returns the number of bytes read. It opens, reads and
// closes with raw system calls and allocates nothing: the hot path of a scan
// over thousands of /proc files, where os.Open's bookkeeping would cost more
// than the kernel's work. Errors are bare unix.Errno values, for the caller
// to wrap; a file that fills buf is an error wrapping io.ErrShortBuffer.
func ReadFileAt(dirfd int, name []byte, buf []byte) (int, error) {
	var path [256]byte
	if len(name) >= len(path) {
		return 0, fmt.Errorf("path %q: %w", string(name), unix.ENAMETOOLONG)
	}
	copy(path[:], name)
	path[len(name)] = 0
	var fd uintptr
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
			unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		fd = r
		break
	}
	defer unix.Close(int(fd))
	n := 0
	for n < len(buf) {
		r, _, e := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[n])), uintptr(len(buf)-n))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		if r == 0 {
			return n, nil
		}
		n += int(r)
		// A short read that ends a line is the whole file: proc files
		// hand over all they have in one read when it fits. One read,
		// not a second to see the end.
		if n < len(buf) && buf[n-1] == '\n' {
			return n, nil
		}
	}
	return n, fmt.Errorf("%s: %d-byte buffer filled: %w", string(name), len(buf), io.ErrShortBuffer)
}
