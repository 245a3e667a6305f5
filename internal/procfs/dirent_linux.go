package procfs

import (
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"
)

// AppendDirIDs reads the open directory dirfd from its start with getdents64
// into buf (8 KiB of the stack's if nil) and appends to ids, sorted
// ascending, the entries whose names are ids (a /proc directory's
// processes, a task directory's threads), without opening anything and
// without a string per entry. It also returns the getdents calls made: the
// sampler keeps such directories open and counts what a listing costs.
func AppendDirIDs(dirfd int, buf []byte, ids []int) (_ []int, calls int, _ error) {
	if _, err := unix.Seek(dirfd, 0, 0); err != nil {
		return ids, 0, err
	}
	if len(buf) == 0 {
		var b [8192]byte
		buf = b[:]
	}
	start := len(ids)
	for {
		calls++
		n, err := unix.Getdents(dirfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ids, calls, err
		}
		if n <= 0 {
			break
		}
		b := buf[:n]
		for len(b) >= 19 {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return ids, calls, parseError("directory", "dirent length %d", reclen)
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
		// Only a getdents that returns 0 ends the listing. proc can return
		// a short batch with more to come: a 1,000-thread task directory
		// came back 257 entries at a time into 8 KiB, and stopping at the
		// first short batch (as this function once did, to save the last
		// call) silently dropped three quarters of the threads.
	}
	slices.Sort(ids[start:])
	return ids, calls, nil
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
