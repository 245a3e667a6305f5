package procfs

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// Status holds the fields of /proc/[pid]/status that cputime needs.
type Status struct {
	// Name is the command name with the kernel's escapes undone: status
	// prints a newline in the name as `\n` and a backslash as `\\`.
	Name string
	// State is the one-letter state, as in [Stat].
	State byte
	// Tgid is the thread group id, the process id; Pid is the thread id;
	// PPid is the parent's process id.
	Tgid, Pid, PPid int
	// Uid and Gid are the real, effective, saved set and file system ids.
	Uid, Gid [4]int
	// Threads is the number of threads of the process.
	Threads int
}

// ParseStatus parses a status file: lines of "Key:\tvalue". Unknown keys are
// ignored; Tgid, Pid and Uid are required. Malformed input yields an error
// wrapping [ErrFileParse].
func ParseStatus(b []byte) (Status, error) {
	var (
		s                     Status
		haveTgid, havePid, ok bool
		haveUid               bool
	)
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		key, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			return Status{}, parseError("status", "line %q has no ':'", clip(line))
		}
		switch string(key) { // no allocation: the compiler special-cases this
		case "Name":
			// The name starts right after one tab and may itself start
			// with white space.
			v, _ := bytes.CutPrefix(value, []byte{'\t'})
			s.Name = unescapeName(v)
		case "State":
			v := trimSpace(value)
			if len(v) == 0 || !isLetter(v[0]) || len(v) > 1 && !isSpace(v[1]) {
				return Status{}, statusError(key, value)
			}
			s.State = v[0]
		case "Tgid":
			s.Tgid, ok = parseSmall(trimSpace(value))
			if !ok {
				return Status{}, statusError(key, value)
			}
			haveTgid = true
		case "Pid":
			s.Pid, ok = parseSmall(trimSpace(value))
			if !ok {
				return Status{}, statusError(key, value)
			}
			havePid = true
		case "PPid":
			if s.PPid, ok = parseSmall(trimSpace(value)); !ok {
				return Status{}, statusError(key, value)
			}
		case "Uid":
			if s.Uid, ok = parseIDs(value); !ok {
				return Status{}, statusError(key, value)
			}
			haveUid = true
		case "Gid":
			if s.Gid, ok = parseIDs(value); !ok {
				return Status{}, statusError(key, value)
			}
		case "Threads":
			if s.Threads, ok = parseSmall(trimSpace(value)); !ok {
				return Status{}, statusError(key, value)
			}
		}
	}
	switch {
	case !haveTgid:
		return Status{}, parseError("status", "no Tgid line")
	case !havePid:
		return Status{}, parseError("status", "no Pid line")
	case !haveUid:
		return Status{}, parseError("status", "no Uid line")
	}
	return s, nil
}

func statusError(key, value []byte) error {
	return parseError("status", "%s %q", key, clip(value))
}

// parseIDs parses the four user or group ids of a Uid or Gid line. A uid_t
// is 32 bits unsigned; on a platform with a 32-bit int, ids above MaxInt32
// are rejected rather than wrapped.
func parseIDs(value []byte) ([4]int, bool) {
	var ids [4]int
	rest := value
	for i := range ids {
		var tok []byte
		tok, rest = nextField(rest)
		u, ok := parseUint(tok)
		if !ok || u > math.MaxUint32 || u > math.MaxInt {
			return ids, false
		}
		ids[i] = int(u)
	}
	if tok, _ := nextField(rest); tok != nil {
		return ids, false
	}
	return ids, true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// unescapeName undoes the escaping of proc_task_name (fs/proc/array.c),
// which prints only '\n' and '\\' escaped. A backslash before anything else
// cannot come from the kernel and is kept as it is.
func unescapeName(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v)
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case 'n':
				c = '\n'
				i++
			case '\\':
				i++
			}
		}
		out = append(out, c)
	}
	return string(out)
}

// ReadStatus reads and parses /proc/[pid]/status.
func (fs FS) ReadStatus(pid int) (Status, error) {
	if err := checkID("process", pid); err != nil {
		return Status{}, fmt.Errorf("reading status: %w", err)
	}
	path := fs.Path(strconv.Itoa(pid), "status")
	b, err := ReadFileInto(path, make([]byte, 0, statusBufSize))
	if err == nil {
		var s Status
		if s, err = ParseStatus(b); err == nil {
			return s, nil
		}
		err = fmt.Errorf("parsing %s: %w", path, err)
	}
	return Status{}, fmt.Errorf("reading status of process %d: %w", pid, err)
}
