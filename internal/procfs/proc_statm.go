package procfs

// Statm holds the fields of /proc/[pid]/statm that cputime needs, in
// pages.
type Statm struct {
	// Size is the whole virtual memory; Resident the resident set (what
	// procps shows as RES): anonymous, file-backed and shared memory
	// pages in RAM.
	Size, Resident uint64
}

// ParseStatm parses a statm file ("size resident shared text lib data
// dt", in pages). Malformed input yields an error wrapping
// [ErrFileParse].
func ParseStatm(b []byte) (Statm, error) {
	size, rest := nextField(b)
	res, _ := nextField(rest)
	var s Statm
	var ok bool
	if s.Size, ok = parseUint(size); !ok {
		return Statm{}, parseError("statm", "size %q is not a number", clip(size))
	}
	if s.Resident, ok = parseUint(res); !ok {
		return Statm{}, parseError("statm", "resident %q is not a number", clip(res))
	}
	return s, nil
}
