package top

import (
	"bytes"
	"os"
	"strconv"

	"github.com/cputime/cputime/internal/procfs"
)

// pageSize converts statm's pages to bytes.
var pageSize = int64(os.Getpagesize())

// memReader reads a process's resident memory from /proc/PID/statm (its
// second field, in pages: what procps top shows as RES), one read per
// process per refresh.
type memReader struct {
	fs  procfs.FS
	buf []byte
}

// rss is process pid's resident memory in bytes, or -1 where it cannot be
// read (gone, access denied).
func (m *memReader) rss(pid int) int64 {
	if m.buf == nil {
		m.buf = make([]byte, 0, 128)
	}
	var num [20]byte
	b, err := procfs.ReadFileInto(m.fs.Path(string(strconv.AppendInt(num[:0], int64(pid), 10)), "statm"), m.buf[:0])
	if err != nil {
		return -1
	}
	m.buf = b
	return parseStatm(b)
}

// parseStatm returns the resident size in bytes from the text of
// /proc/PID/statm ("size resident shared text lib data dt", in pages), or
// -1 if it is not that.
func parseStatm(b []byte) int64 {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 || pages > 1<<50/pageSize {
		return -1
	}
	return pages * pageSize
}
