package cputime

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// SystemTime is a calendar date and time of day in the layout of Win32
// SYSTEMTIME, fields in its order: Year (1601-30827), Month (1-12),
// DayOfWeek (0 = Sunday), Day (1-31), Hour (0-23), Minute (0-59),
// Second (0-59) and Milliseconds (0-999). Whether it is UTC or local time
// depends on where it came from, as in Win32.
type SystemTime struct {
	Year, Month, DayOfWeek, Day, Hour, Minute, Second, Milliseconds uint16
}

// SystemTime splits f into calendar fields, as FileTimeToSystemTime does:
// the sub-millisecond part is dropped and DayOfWeek is filled in. Like
// Windows, it fails with ErrInvalidArgument for f >= 2^63 ("only works
// with FILETIME values that are less than 0x8000000000000000", Win32
// FileTimeToSystemTime documentation). Values from 30828-01-01 up to 2^63
// (30828-09-14 02:48:05.477) succeed with Year 30828, as on Windows,
// although SystemTime.Filetime rejects that year.
func (f Filetime) SystemTime() (SystemTime, error) {
	if f > math.MaxInt64 {
		return SystemTime{}, fmt.Errorf("filetime 0x%x out of range for SystemTime: %w", uint64(f), ErrInvalidArgument)
	}
	return fieldsFromTicks(uint64(f)), nil
}

// Filetime returns s as 100 ns ticks since 1601, as SystemTimeToFileTime
// does, and fails with ErrInvalidArgument where Windows fails:
//   - Year outside 1601-30827, the range the Win32 SYSTEMTIME documentation
//     gives. 30827-12-31 23:59:59.999 is accepted (Windows returns
//     0x7fff35f4f06c58f0 for it; Stack Overflow question 9999393). Whether
//     Windows also takes the part of 30828 below 2^63 is undocumented and
//     no test of it was found; ReactOS's RtlTimeFieldsToTime has no upper
//     bound at all and would wrap into negative times. We keep to the
//     documented range.
//   - Month outside 1-12, Hour > 23, Minute > 59, Second > 59 or
//     Milliseconds > 999: no normalization, as in Wine's tests of native
//     Windows (dlls/kernel32/tests/time.c, test_invalid_arg).
//   - Day 0 or past the end of the month in the Gregorian calendar, so
//     February 29 of a common year fails (Microsoft's leap-year-readiness
//     note on SystemTimeToFileTime). Wine 8 accepts it; Windows wins.
//
// DayOfWeek is ignored, as the Win32 documentation says.
func (s SystemTime) Filetime() (Filetime, error) {
	if s.Year < 1601 || s.Year > 30827 {
		return 0, fmt.Errorf("SystemTime year %d outside 1601-30827: %w", s.Year, ErrInvalidArgument)
	}
	if err := validateFields(s); err != nil {
		return 0, fmt.Errorf("SystemTime %s: %w", err, ErrInvalidArgument)
	}
	return Filetime(ticksFromFields(s)), nil
}

// ToLocal converts f from UTC to local time as FileTimeToLocalFileTime
// does, in 100 ns ticks since 1601 local time.
//
// Like Windows, it applies the offset of time.Local in force NOW,
// including daylight saving time if it is in effect now, not the offset
// in force at the instant f. A winter date converted in summer comes out
// an hour off. Use f.Time().In(loc) for the historically correct local
// time.
//
// A result below 0 or above 2^64-1 ticks fails with ErrInvalidArgument.
// Windows instead returns success with the wrapped value (The Old New
// Thing, 2015-03-06, "A question about the FileTimeToLocalFileTime
// function turned out to be something else"), which is never a useful time.
func (f Filetime) ToLocal() (Filetime, error) {
	_, offset := time.Now().Zone()
	return toLocal(f, offset)
}

// LocalToFiletime converts local, in 100 ns ticks since 1601 local time,
// to UTC as LocalFileTimeToFileTime does. The same warning as ToLocal
// applies: the offset is the one in force now, daylight saving time
// included, whatever the date converted. Out-of-range results fail with
// ErrInvalidArgument.
func LocalToFiletime(local Filetime) (Filetime, error) {
	_, offset := time.Now().Zone()
	return fromLocal(local, offset)
}

// toLocal adds offset seconds east of UTC to f; tests inject offsets
// rather than depend on the machine's zone.
func toLocal(f Filetime, offset int) (Filetime, error) {
	r, ok := shiftSeconds(uint64(f), offset, offset >= 0)
	if !ok {
		return 0, fmt.Errorf("filetime 0x%x with UTC offset %ds out of range for local time: %w", uint64(f), offset, ErrInvalidArgument)
	}
	return Filetime(r), nil
}

// fromLocal subtracts offset seconds east of UTC from a local time.
func fromLocal(local Filetime, offset int) (Filetime, error) {
	r, ok := shiftSeconds(uint64(local), offset, offset < 0)
	if !ok {
		return 0, fmt.Errorf("local filetime 0x%x with UTC offset %ds out of range for UTC: %w", uint64(local), offset, ErrInvalidArgument)
	}
	return Filetime(r), nil
}

// shiftSeconds moves v, in ticks, by |seconds| later (add) or earlier
// (!add), reporting false if the result leaves [0, 2^64-1]. Working on the
// magnitude avoids negating math.MinInt64.
func shiftSeconds(v uint64, seconds int, add bool) (uint64, bool) {
	mag := uint64(int64(seconds))
	if seconds < 0 {
		mag = -mag // two's complement magnitude, exact even for MinInt64
	}
	hi, d := bits.Mul64(mag, TicksPerSecond)
	if hi != 0 {
		return 0, false
	}
	if add {
		r, carry := bits.Add64(v, d, 0)
		return r, carry == 0
	}
	r, borrow := bits.Sub64(v, d, 0)
	return r, borrow == 0
}

// Boundaries of FileTimeToDosDateTime in ticks: the MS-DOS date covers
// 1980-01-01 to 2107-12-31, and Windows rounds up to the next 2-second
// step before checking, so the first accepted instant is one tick after
// 1979-12-31 23:59:58 and the last is 2107-12-31 23:59:58 itself.
const (
	dosRoundUpTicks = 2*TicksPerSecond - 1
	dosEpochTicks   = 119_600_064_000_000_000 // 1980-01-01 00:00:00 UTC
	dosMinTicks     = dosEpochTicks - dosRoundUpTicks
	dosMaxTicks     = 159_992_927_980_000_000 // 2107-12-31 23:59:58 UTC
)

// DosDateTime returns f as an MS-DOS date and time, as
// FileTimeToDosDateTime does. date packs bits 15-9 year-1980, 8-5 month,
// 4-0 day; tm packs bits 15-11 hour, 10-5 minute, 4-0 seconds/2. Like
// Windows, f is taken as is, without conversion to local time (call
// ToLocal first for the FAT convention).
//
// MS-DOS time has 2-second steps and Windows ROUNDS UP to the next step
// (adding 2 s minus one tick, then truncating), so 10:45:29 and 10:45:30
// both give 10:45:30 and 10:45:31 gives 10:45:32. The evidence is
// Microsoft's own conformance test for the .NET PAL (dotnet/runtime,
// pal/tests/palsuite/file_io/FileTimeToDosDateTime/test1): it expects
// exactly those values, and expects
// 2107-12-31 23:59:58.0000001 (one tick past the last even second) and
// 1979-12-31 23:59:58 to fail. FAT write times round up the same way.
// Wine and ReactOS truncate; Windows wins.
//
// Instants that do not round into 1980-01-01 .. 2107-12-31 23:59:58 fail
// with ErrInvalidArgument, as Windows fails ("The MS-DOS date format can
// represent only dates between 1/1/1980 and 12/31/2107; this conversion
// fails if the input file time is outside this range", Win32
// documentation); Wine 8 wraps the year field instead.
func (f Filetime) DosDateTime() (date, tm uint16, err error) {
	if f < dosMinTicks || f > dosMaxTicks {
		return 0, 0, fmt.Errorf("filetime %v out of range for MS-DOS date and time (1980-01-01 to 2107-12-31 23:59:58): %w", f, ErrInvalidArgument)
	}
	s := fieldsFromTicks(uint64(f) + dosRoundUpTicks)
	date = (s.Year-1980)<<9 | s.Month<<5 | s.Day
	tm = s.Hour<<11 | s.Minute<<5 | s.Second/2
	return date, tm, nil
}

// FiletimeFromDosDateTime returns the MS-DOS date and time as 100 ns
// ticks since 1601, as DosDateTimeToFileTime does, without conversion from
// local time (Windows does none either). The 7-bit year field always gives
// 1980-2107, but the other fields can hold impossible values and, like
// Windows, those fail with ErrInvalidArgument instead of being
// normalized: month 0 or 13-15, day 0 or past the end of the month
// (February 29 of a common year included), hour 24-31, minute 60-63, and
// a seconds/2 field of 30 or 31 (60 or 62 seconds). Windows does this
// check in RtlTimeFieldsToTime, the same one SystemTimeToFileTime uses;
// Microsoft's .NET PAL conformance test (dotnet/runtime,
// pal/tests/palsuite/file_io/DosDateTimeToFileTime/test2) expects
// ERROR_INVALID_PARAMETER for 62 seconds, minute
// 60, hour 24, month 15 and day 0. Wine 8 accepts February 29 of common
// years; Windows wins.
func FiletimeFromDosDateTime(date, tm uint16) (Filetime, error) {
	s := SystemTime{
		Year:   1980 + date>>9,
		Month:  date >> 5 & 0x0f,
		Day:    date & 0x1f,
		Hour:   tm >> 11,
		Minute: tm >> 5 & 0x3f,
		Second: (tm & 0x1f) * 2,
	}
	if err := validateFields(s); err != nil {
		return 0, fmt.Errorf("MS-DOS date 0x%04x time 0x%04x: %s: %w", date, tm, err, ErrInvalidArgument)
	}
	return Filetime(ticksFromFields(s)), nil
}

// validateFields checks every SystemTime field except Year (whose range
// differs between SystemTimeToFileTime and MS-DOS dates) and DayOfWeek
// (which Windows ignores). The reason it returns wraps no sentinel, so
// each caller adds its own context and ErrInvalidArgument.
func validateFields(s SystemTime) error {
	switch {
	case s.Month < 1 || s.Month > 12:
		return fmt.Errorf("month %d outside 1-12", s.Month)
	case s.Day < 1 || s.Day > daysInMonth(s.Year, s.Month):
		return fmt.Errorf("day %d outside 1-%d for %04d-%02d", s.Day, daysInMonth(s.Year, s.Month), s.Year, s.Month)
	case s.Hour > 23:
		return fmt.Errorf("hour %d above 23", s.Hour)
	case s.Minute > 59:
		return fmt.Errorf("minute %d above 59", s.Minute)
	case s.Second > 59:
		return fmt.Errorf("second %d above 59", s.Second)
	case s.Milliseconds > 999:
		return fmt.Errorf("milliseconds %d above 999", s.Milliseconds)
	}
	return nil
}

func isLeapYear(y uint16) bool {
	return y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

// daysBeforeMonth[m-1] is the number of days in a common year before
// month m; leap years add one from March on.
var daysBeforeMonth = [12]uint16{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}

func daysInMonth(y, m uint16) uint16 {
	switch m {
	case 2:
		if isLeapYear(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ticksFromFields converts fields already checked by validateFields, with
// Year >= 1601, to ticks since 1601. Year <= 60056 keeps it within uint64.
func ticksFromFields(s SystemTime) uint64 {
	y := uint64(s.Year) - 1601
	days := 365*y + y/4 - y/100 + y/400
	days += uint64(daysBeforeMonth[s.Month-1])
	if s.Month > 2 && isLeapYear(s.Year) {
		days++
	}
	days += uint64(s.Day) - 1
	secs := days*86_400 + uint64(s.Hour)*3600 + uint64(s.Minute)*60 + uint64(s.Second)
	return secs*TicksPerSecond + uint64(s.Milliseconds)*ticksPerMillisecond
}

// fieldsFromTicks splits ticks since 1601 into calendar fields. It is
// defined for every uint64 (the last year, 60056, fits a uint16) and uses
// the 400/100/4/1-year cycles that start on 1601-01-01.
func fieldsFromTicks(t uint64) SystemTime {
	days := t / ticksPerDay
	rem := t % ticksPerDay

	n400 := days / daysPer400Years
	d := days % daysPer400Years
	n100 := min(d/daysPer100Years, 3) // the 4th century ends with a leap day
	d -= n100 * daysPer100Years
	n4 := d / daysPer4Years
	d %= daysPer4Years
	n1 := min(d/365, 3) // the 4th year of a group is the leap year
	d -= n1 * 365

	year := uint16(1601 + 400*n400 + 100*n100 + 4*n4 + n1)
	yday := uint16(d) // 0-based day of the year
	leap := uint16(0)
	if isLeapYear(year) {
		leap = 1
	}
	month := uint16(12)
	for month > 1 {
		before := daysBeforeMonth[month-1]
		if month > 2 {
			before += leap
		}
		if yday >= before {
			yday -= before
			break
		}
		month--
	}

	return SystemTime{
		Year:         year,
		Month:        month,
		DayOfWeek:    uint16((days + 1) % 7), // 1601-01-01 was a Monday
		Day:          yday + 1,
		Hour:         uint16(rem / (3600 * TicksPerSecond)),
		Minute:       uint16(rem / (60 * TicksPerSecond) % 60),
		Second:       uint16(rem / TicksPerSecond % 60),
		Milliseconds: uint16(rem % TicksPerSecond / ticksPerMillisecond),
	}
}
