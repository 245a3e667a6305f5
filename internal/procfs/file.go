package procfs

import "runtime"

// File is an open proc file read again and again from offset 0 with
// pread(2), without allocating: the hot-path alternative to [ReadFileInto]
// for a task's stat or schedstat.
//
// The kernel binds the descriptor of a /proc/[pid]/... file to the task it
// was opened for, not to the pid: once that task has exited and been reaped,
// ReadAt0 fails with an error wrapping syscall.ESRCH, and a new task that
// reuses the pid never answers through it. Between exit and reaping (a
// zombie) reads still succeed and show the final times.
//
// ReadAt0 may be called concurrently; Close must not race with it.
//
// File works on Linux only; elsewhere [OpenFile] returns an error wrapping
// errors.ErrUnsupported.
type File struct {
	fd      int
	path    string // for error messages
	cleanup runtime.Cleanup
}

// OpenFile opens the proc file at path for reading (O_RDONLY|O_CLOEXEC).
// Errors are *os.PathError values keeping the errno.
func OpenFile(path string) (*File, error) {
	return openFile(path)
}

// ReadAt0 reads the file from offset 0 into buf with a single pread(2),
// retried on EINTR, and returns the number of bytes read. It is meant for
// proc files generated as one record (stat, status, schedstat, /proc/stat),
// which the kernel returns whole from one read when buf is large enough. If
// the content fills buf completely, it may have been cut, and ReadAt0
// returns an error wrapping io.ErrShortBuffer: buf must be larger than the
// file.
func (f *File) ReadAt0(buf []byte) (int, error) {
	return f.readAt0(buf)
}

// Close closes the file. Closing it again returns an error wrapping
// os.ErrClosed.
func (f *File) Close() error {
	return f.close()
}
