package cputime

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// A Win32 FILETIME carries two different quantities, and mixing them is
// the classic bug, so they get two types: Filetime is an instant (creation
// and exit times of GetThreadTimes/GetProcessTimes), Ticks is an amount of
// time (kernel and user times). Both count 100 ns ticks, both are
// unsigned 64-bit like FILETIME itself, and all conversions are exact
// integer arithmetic: a float64 cannot hold a present-day FILETIME
// (about 1.3e17 ticks) to the tick.

// Filetime is an instant: 100 ns ticks since 1601-01-01 00:00:00 UTC, the
// Win32 FILETIME of a creation or exit time. Every uint64 value is a valid
// instant (the last one is in the year 60056), although Win32's SYSTEMTIME
// functions only accept values below 2^63.
type Filetime uint64

// Ticks is an amount of time in 100 ns ticks: the Win32 FILETIME of the
// kernel and user times of GetThreadTimes and GetProcessTimes. Its origin
// is zero, not 1601: converting it as an instant, as
// golang.org/x/sys/windows's Filetime.Nanoseconds does, subtracts the 369
// years from 1601 to 1970 and overflows int64 for every amount below about
// 77 years, which is every real CPU time.
type Ticks uint64

// TicksPerSecond is the number of 100 ns ticks in one second, the unit of
// both Filetime and Ticks.
const TicksPerSecond = 10_000_000

const (
	nanosecondsPerTick  = 100
	ticksPerMillisecond = TicksPerSecond / 1000
	ticksPerDay         = 86_400 * TicksPerSecond

	// epochDeltaSeconds is the number of seconds from 1601-01-01 to the Unix
	// epoch 1970-01-01, both UTC: 369 years, 89 of them leap years
	// (1700, 1800 and 1900 are not).
	epochDeltaSeconds = (369*365 + 89) * 86_400

	// maxFiletimeSeconds is the whole seconds of the largest Filetime,
	// 2^64-1 ticks, counted from 1601; maxFiletimeSubTicks is the part of
	// that last second it still covers, in ticks.
	maxFiletimeSeconds  = math.MaxUint64 / TicksPerSecond
	maxFiletimeSubTicks = math.MaxUint64 % TicksPerSecond

	// daysPer400Years: 1601-01-01 starts a 400-year Gregorian cycle, so the
	// calendar arithmetic below needs no offset.
	daysPer400Years = 400*365 + 97
	daysPer100Years = 100*365 + 24
	daysPer4Years   = 4*365 + 1
)

// FiletimeFromTime returns the instant t as a Filetime, in 100 ns ticks
// since 1601-01-01 UTC. The sub-100 ns part of t is dropped toward the
// past, so instants before 1970 round the same way as later ones. It fails
// with ErrInvalidArgument for instants before 1601 or after the largest
// Filetime (2^64-1 ticks, in the year 60056), which includes the extremes
// of time.Time's range.
func FiletimeFromTime(t time.Time) (Filetime, error) {
	// Unix() floors and Nanosecond() is in [0, 1e9) even before 1970, so
	// the pair is a floor split; UnixNano would overflow past 2262.
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	if sec < -epochDeltaSeconds || sec > maxFiletimeSeconds-epochDeltaSeconds {
		return 0, fmt.Errorf("time %s out of range for Filetime: %w", t.UTC().Format(time.RFC3339Nano), ErrInvalidArgument)
	}
	s := uint64(sec + epochDeltaSeconds) // in [0, maxFiletimeSeconds]
	sub := nsec / nanosecondsPerTick
	if s == maxFiletimeSeconds && sub > maxFiletimeSubTicks {
		return 0, fmt.Errorf("time %s out of range for Filetime: %w", t.UTC().Format(time.RFC3339Nano), ErrInvalidArgument)
	}
	return Filetime(s*TicksPerSecond + sub), nil
}

// Time returns f as a time.Time in UTC. It is exact for every uint64:
// time.Time reaches far past the year 60056, while a time.Duration from
// 1601 would overflow after 292 years.
func (f Filetime) Time() time.Time {
	sec := int64(uint64(f)/TicksPerSecond) - epochDeltaSeconds
	nsec := int64(uint64(f)%TicksPerSecond) * nanosecondsPerTick
	return time.Unix(sec, nsec).UTC()
}

// String formats f as RFC 3339 in UTC with as many fractional digits as
// it needs (time.RFC3339Nano); years past 9999 print in full.
func (f Filetime) String() string {
	return f.Time().Format(time.RFC3339Nano)
}

// FiletimeFromParts joins the two 32-bit halves of a Win32 FILETIME,
// dwLowDateTime and dwHighDateTime, into one instant in 100 ns ticks.
func FiletimeFromParts(low, high uint32) Filetime {
	return Filetime(uint64(high)<<32 | uint64(low))
}

// Parts splits f into the dwLowDateTime and dwHighDateTime halves of a
// Win32 FILETIME, for passing to APIs that take the struct.
func (f Filetime) Parts() (low, high uint32) {
	return uint32(f), uint32(f >> 32)
}

// TicksFromParts joins dwLowDateTime and dwHighDateTime of a FILETIME that
// holds an amount of time (such as a kernel or user time) into Ticks.
func TicksFromParts(low, high uint32) Ticks {
	return Ticks(uint64(high)<<32 | uint64(low))
}

// Parts splits t into the dwLowDateTime and dwHighDateTime halves of a
// Win32 FILETIME.
func (t Ticks) Parts() (low, high uint32) {
	return uint32(t), uint32(t >> 32)
}

// TicksFromDuration returns d in 100 ns ticks, dropping any sub-100 ns
// remainder. A negative duration fails with ErrInvalidArgument because
// FILETIME amounts are unsigned.
func TicksFromDuration(d time.Duration) (Ticks, error) {
	if d < 0 {
		return 0, fmt.Errorf("duration %v negative, not representable as Ticks: %w", d, ErrInvalidArgument)
	}
	return Ticks(d / nanosecondsPerTick), nil
}

// Duration returns t in nanoseconds as a time.Duration. Ticks reach about
// 58,000 years and time.Duration only 292, so amounts above
// math.MaxInt64 ns fail with ErrInvalidArgument rather than wrap. This is
// the conversion golang.org/x/sys/windows gets wrong: its
// Filetime.Nanoseconds treats a kernel or user time as an instant,
// subtracting the 1601-to-1970 offset and overflowing.
func (t Ticks) Duration() (time.Duration, error) {
	if t > math.MaxInt64/nanosecondsPerTick {
		return 0, fmt.Errorf("ticks %d out of range for time.Duration: %w", uint64(t), ErrInvalidArgument)
	}
	return time.Duration(t) * nanosecondsPerTick, nil
}

// String formats t like time.Duration ("1.5s") where it fits one, and
// as "N ticks" (100 ns each) beyond 292 years.
func (t Ticks) String() string {
	d, err := t.Duration()
	if err != nil {
		return fmt.Sprintf("%d ticks", uint64(t))
	}
	return d.String()
}

// CompareFiletime orders two instants like Win32 CompareFileTime: -1 if a
// is earlier than b, 0 if they are equal, +1 if a is later.
func CompareFiletime(a, b Filetime) int {
	return cmp.Compare(a, b)
}
