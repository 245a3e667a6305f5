package procfs

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

func openFile(path string) (*File, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
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
