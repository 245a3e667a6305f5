package procfs

import (
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"
)

// AppendDirIDs reads the open directory dirfd from its start with getdents64
// and appends to ids, sorted ascending, the entries whose names are ids
// (a /proc directory's processes, a task directory's threads), without
// opening anything and without a string per entry. The sampler keeps such
// directories open and lists them on every refresh.
func AppendDirIDs(dirfd int, ids []int) ([]int, error) {
	if _, err := unix.Seek(dirfd, 0, 0); err != nil {
		return ids, err
	}
	start := len(ids)
	var buf [8192]byte
	for {
		n, err := unix.Getdents(dirfd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ids, err
		}
		if n <= 0 {
			break
		}
		b := buf[:n]
		for len(b) >= 19 {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return ids, parseError("directory", "dirent length %d", reclen)
			}
			name := b[19:reclen]
			if i := indexZero(name); i >= 0 {
				name = name[:i]
			}
			if id, ok := parseIDBytes(name); ok {
				ids = append(ids, id)
			}
			b = b[reclen:]
		}
	}
	slices.Sort(ids[start:])
	return ids, nil
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// parseIDBytes is parseID on bytes, without converting to a string.
func parseIDBytes(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 || b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return n, true
}
