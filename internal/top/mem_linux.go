package top

import (
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
// /proc/PID/statm, or -1 if it is not that.
func parseStatm(b []byte) int64 {
	s, err := procfs.ParseStatm(b)
	if err != nil || s.Resident > uint64(1<<50/pageSize) {
		return -1
	}
	return int64(s.Resident) * pageSize
}
