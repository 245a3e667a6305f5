//go:build !linux

package procfs

import (
	"errors"
	"os"
)

func openFile(path string) (*File, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: errors.ErrUnsupported}
}

func (f *File) readAt0(buf []byte) (int, error) {
	return 0, &os.PathError{Op: "pread", Path: f.path, Err: errors.ErrUnsupported}
}

func (f *File) close() error {
	return &os.PathError{Op: "close", Path: f.path, Err: errors.ErrUnsupported}
}
