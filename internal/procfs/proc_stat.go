package procfs

import (
	"bytes"
	"fmt"
	"strconv"
)

// Stat holds the fields of a /proc/[pid]/stat or /proc/[pid]/task/[tid]/stat
// line that cputime needs. Field numbers are those of proc_pid_stat(5).
type Stat struct {
	// PID is the process id (field 1); in a task's stat, the thread id.
	PID int
	// Comm is the command name (field 2) without the parentheses. From
	// ParseStat it aliases the parsed buffer: copy it before the buffer is
	// reused. It may contain spaces, parentheses and newlines.
	Comm []byte
	// State is the one-letter state (field 3): R, S, D, Z, T, t, X, I, ...
	State byte
	// PPID is the parent's process id (field 4).
	PPID int
	// Flags is the kernel's task flags (field 9, PF_* in
	// include/linux/sched.h); for a process, its main thread's.
	Flags uint64
	// UTime and STime are the time scheduled in user and kernel mode
	// (fields 14, 15), in USER_HZ clock ticks.
	UTime, STime uint64
	// CUTime and CSTime are the user and kernel time of waited-for children
	// (fields 16, 17), in USER_HZ clock ticks.
	CUTime, CSTime uint64
	// Priority (field 18) and Nice (field 19) as the kernel prints them.
	Priority, Nice int64
	// NumThreads is the number of threads of the process (field 20).
	NumThreads int
	// StartTime is when the task started (field 22), in USER_HZ clock ticks
	// since boot: CLOCK_BOOTTIME since Linux 4.17 (suspend included),
	// CLOCK_MONOTONIC before.
	StartTime uint64
	// Processor is the CPU the task last ran on (field 39), or -1 when the
	// line is too short to have it (kernels before 2.2.8).
	Processor int
}

// Stat field numbers (proc_pid_stat(5)).
const (
	statPID        = 1
	statComm       = 2
	statState      = 3
	statPPID       = 4
	statFlags      = 9
	statUTime      = 14
	statSTime      = 15
	statCUTime     = 16
	statCSTime     = 17
	statPriority   = 18
	statNice       = 19
	statNumThreads = 20
	statStartTime  = 22
	statProcessor  = 39

	// statNameWindow is how far after '(' ParseStat first looks for the
	// name's end: past the 64 bytes of the longest name the kernel prints
	// (a workqueue worker's). A longer name is still parsed right, by a
	// second search.
	statNameWindow = 128

	// statWanted has a bit set for each field ParseStat keeps.
	statWanted uint64 = 1<<statPPID | 1<<statFlags | 1<<statUTime | 1<<statSTime |
		1<<statCUTime | 1<<statCSTime | 1<<statPriority | 1<<statNice |
		1<<statNumThreads | 1<<statStartTime | 1<<statProcessor

	// statRequired is the last field ParseStat insists on; kernels older
	// than 2.2 ended the line soon after it.
	statRequired = statStartTime
)

// ParseStat parses one stat line into s without allocating. The command
// name lies between the first '(' and the last ')', because it may itself
// contain parentheses and spaces ("1234 (a) (b) c) R 1 ..."), but nothing
// after it can contain a ')'. The fields after the name are separated by
// ASCII white space; each must be a decimal integer, except field 3, a
// letter. Fields up to 22 are required, later ones optional.
//
// Malformed input yields an error wrapping [ErrFileParse].
//
// The Stat is returned by value, not stored through a pointer: Comm aliases
// b, and storing it through a pointer parameter would make every caller's
// buffer escape to the heap.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	if open < 0 {
		return Stat{}, parseError("stat", "no '(' before the command name")
	}
	// The last ')' is the name's end; bytes.LastIndexByte is a plain loop
	// over the whole line, so look for it near '(' (names are short) and
	// prove it is the last with IndexByte, which is vectorized.
	close := bytes.LastIndexByte(b[open:min(len(b), open+statNameWindow)], ')')
	if close >= 0 {
		close += open
	}
	if close < 0 || bytes.IndexByte(b[close+1:], ')') >= 0 {
		close = bytes.LastIndexByte(b, ')')
	}
	if close < open {
		return Stat{}, parseError("stat", "no ')' after the command name")
	}

	var t Stat
	pid := b[:open]
	end := len(pid)
	for end > 0 && isSpace(pid[end-1]) {
		end--
	}
	if end == len(pid) {
		return Stat{}, parseError("stat", "no space between the pid and '('")
	}
	var ok bool
	if t.PID, ok = parseSmall(pid[:end]); !ok || t.PID == 0 {
		return Stat{}, fieldError(statPID, "pid", pid[:end])
	}
	// The full slice expression keeps an append to Comm from overwriting
	// the rest of the line.
	t.Comm = b[open+1 : close : close]

	// One pass over the fields, with no slicing for the 40-odd that are
	// only checked to be integers: this runs for every thread of a scan.
	rest := b[close+1:]
	field := statComm
	for p := 0; ; {
		for p < len(rest) && isSpace(rest[p]) {
			p++
		}
		if p >= len(rest) {
			break
		}
		field++
		start := p
		if field == statState {
			p++
			if !isLetter(rest[start]) || p < len(rest) && !isSpace(rest[p]) {
				return Stat{}, fieldError(field, "state", token(rest, start))
			}
			t.State = rest[start]
			continue
		}
		if rest[p] == '-' {
			p++
		}
		digits := p
		for p < len(rest) && rest[p]-'0' <= 9 {
			p++
		}
		if p == digits || p < len(rest) && !isSpace(rest[p]) {
			return Stat{}, fieldError(field, statFieldName(field), token(rest, start))
		}
		if field >= 64 || statWanted&(1<<field) == 0 {
			continue
		}
		tok := rest[start:p]
		switch field {
		case statPPID:
			t.PPID, ok = parseSmall(tok)
		case statFlags:
			t.Flags, ok = parseUint(tok)
		case statUTime:
			t.UTime, ok = parseUint(tok)
		case statSTime:
			t.STime, ok = parseUint(tok)
		case statCUTime:
			t.CUTime, ok = parseUint(tok)
		case statCSTime:
			t.CSTime, ok = parseUint(tok)
		case statPriority:
			t.Priority, ok = parseInt(tok)
		case statNice:
			t.Nice, ok = parseInt(tok)
		case statNumThreads:
			t.NumThreads, ok = parseSmall(tok)
		case statStartTime:
			t.StartTime, ok = parseUint(tok)
		case statProcessor:
			t.Processor, ok = parseSmall(tok)
		}
		if !ok {
			return Stat{}, fieldError(field, statFieldName(field), tok)
		}
	}
	if field < statRequired {
		return Stat{}, parseError("stat", "%d fields, want at least %d", field, statRequired)
	}
	if field < statProcessor {
		t.Processor = -1
	}
	return t, nil
}

// token is the run of non-space bytes of b from start: a field for an error.
func token(b []byte, start int) []byte {
	end := start
	for end < len(b) && !isSpace(b[end]) {
		end++
	}
	return b[start:end]
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func statFieldName(field int) string {
	switch field {
	case statPPID:
		return "ppid"
	case statUTime:
		return "utime"
	case statSTime:
		return "stime"
	case statCUTime:
		return "cutime"
	case statCSTime:
		return "cstime"
	case statPriority:
		return "priority"
	case statNice:
		return "nice"
	case statNumThreads:
		return "num_threads"
	case statStartTime:
		return "starttime"
	case statProcessor:
		return "processor"
	}
	return "integer"
}

func fieldError(field int, name string, tok []byte) error {
	return parseError("stat", "field %d (%s) %q", field, name, clip(tok))
}

// ReadStat reads and parses /proc/[pid]/stat. The returned Comm is a copy
// owned by the caller.
func (fs FS) ReadStat(pid int) (Stat, error) {
	if err := checkID("process", pid); err != nil {
		return Stat{}, fmt.Errorf("reading stat: %w", err)
	}
	s, err := readStat(fs.Path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("reading stat of process %d: %w", pid, err)
	}
	return s, nil
}

// ReadTaskStat reads and parses /proc/[pid]/task/[tid]/stat, the stat line
// of one thread: its times are the thread's own, not the process's. The
// returned Comm is a copy owned by the caller.
func (fs FS) ReadTaskStat(pid, tid int) (Stat, error) {
	if err := checkID("process", pid); err != nil {
		return Stat{}, fmt.Errorf("reading thread stat: %w", err)
	}
	if err := checkID("thread", tid); err != nil {
		return Stat{}, fmt.Errorf("reading thread stat: %w", err)
	}
	s, err := readStat(fs.Path(strconv.Itoa(pid), "task", strconv.Itoa(tid), "stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("reading stat of thread %d of process %d: %w", tid, pid, err)
	}
	return s, nil
}

func readStat(path string) (Stat, error) {
	b, err := ReadFileInto(path, make([]byte, 0, statBufSize))
	if err != nil {
		return Stat{}, err
	}
	return parseStatOwned(b, path)
}

// parseStatOwned parses the stat line b read from path, its Comm a copy:
// the caller does not keep the whole buffer alive, and the contract is the
// same as with a reused one.
func parseStatOwned(b []byte, path string) (Stat, error) {
	s, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("parsing %s: %w", path, err)
	}
	s.Comm = bytes.Clone(s.Comm)
	return s, nil
}

// StatFile is a process's /proc/[pid]/stat kept open to be read later. The
// kernel binds the open file to the process it was opened for, not to the
// pid (see [File]): read after the process has exited and before it is
// reaped, its line has the final times, its own and its reaped
// descendants' (cutime, cstime); once it is reaped, a read fails, and it
// never answers for a new process that took the pid. Linux only: elsewhere
// OpenStat returns an error wrapping errors.ErrUnsupported.
type StatFile struct {
	f *File
}

// statFileBufSize holds any stat line: about 300 bytes, a 64-byte name at
// most.
const statFileBufSize = 4096

// OpenStat opens /proc/[pid]/stat to be read later by [StatFile.Read].
func (fs FS) OpenStat(pid int) (*StatFile, error) {
	if err := checkID("process", pid); err != nil {
		return nil, fmt.Errorf("opening stat: %w", err)
	}
	f, err := OpenFile(fs.Path(strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, fmt.Errorf("opening stat of process %d: %w", pid, err)
	}
	return &StatFile{f: f}, nil
}

// Read reads and parses the stat line as it is now. The returned Comm is
// a copy owned by the caller.
func (s *StatFile) Read() (Stat, error) {
	buf := make([]byte, statFileBufSize)
	n, err := s.f.ReadAt0(buf)
	if err != nil {
		return Stat{}, err
	}
	return parseStatOwned(buf[:n], s.f.path)
}

// Close closes the file.
func (s *StatFile) Close() error { return s.f.Close() }
