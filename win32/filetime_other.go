//go:build !windows

package win32

import "github.com/cputime/cputime"

// The conversions are cputime's Filetime functions, which follow Windows
// in every corner case their documentation lists: out-of-range values fail
// with ERROR_INVALID_PARAMETER, nil pointers with ERROR_NOACCESS, and
// nothing is written on failure.

func filetimeOf(ft *Filetime) cputime.Filetime {
	return cputime.FiletimeFromParts(ft.LowDateTime, ft.HighDateTime)
}

func storeFiletime(dst *Filetime, f cputime.Filetime) {
	dst.LowDateTime, dst.HighDateTime = f.Parts()
}

// FileTimeToSystemTime splits an instant into calendar fields, dropping the
// part below a millisecond, through cputime's Filetime.SystemTime. A
// FILETIME at or above 2^63 fails with ERROR_INVALID_PARAMETER, as on
// Windows.
func FileTimeToSystemTime(fileTime *Filetime, systemTime *Systemtime) (err error) {
	if fileTime == nil || systemTime == nil {
		return ERROR_NOACCESS
	}
	s, err := filetimeOf(fileTime).SystemTime()
	if err != nil {
		return errnoOf(err)
	}
	*systemTime = Systemtime(s)
	return nil
}

// SystemTimeToFileTime joins calendar fields into an instant, through
// cputime's SystemTime.Filetime. As on Windows, fields out of range fail
// with ERROR_INVALID_PARAMETER instead of being normalized: a year outside
// 1601-30827, month 0 or 13, day 0 or past the end of the month (February
// 29 of a common year included), hour 24, minute or second 60,
// milliseconds 1000. DayOfWeek is ignored.
func SystemTimeToFileTime(systemTime *Systemtime, fileTime *Filetime) (err error) {
	if systemTime == nil || fileTime == nil {
		return ERROR_NOACCESS
	}
	f, err := cputime.SystemTime(*systemTime).Filetime()
	if err != nil {
		return errnoOf(err)
	}
	storeFiletime(fileTime, f)
	return nil
}

// FileTimeToLocalFileTime converts an instant from UTC to local time with
// the offset of time.Local in force now (daylight saving time included if
// it is in effect now), as Windows does, through cputime's
// Filetime.ToLocal. One difference: a result below 0 or above 2^64-1 ticks
// fails with ERROR_INVALID_PARAMETER, where Windows wraps it around and
// succeeds.
func FileTimeToLocalFileTime(fileTime *Filetime, localFileTime *Filetime) (err error) {
	if fileTime == nil || localFileTime == nil {
		return ERROR_NOACCESS
	}
	f, err := filetimeOf(fileTime).ToLocal()
	if err != nil {
		return errnoOf(err)
	}
	storeFiletime(localFileTime, f)
	return nil
}

// LocalFileTimeToFileTime converts an instant from local time to UTC, the
// inverse of FileTimeToLocalFileTime, with the same offset rule and the
// same difference from Windows.
func LocalFileTimeToFileTime(localFileTime *Filetime, fileTime *Filetime) (err error) {
	if localFileTime == nil || fileTime == nil {
		return ERROR_NOACCESS
	}
	f, err := cputime.LocalToFiletime(filetimeOf(localFileTime))
	if err != nil {
		return errnoOf(err)
	}
	storeFiletime(fileTime, f)
	return nil
}

// FileTimeToDosDateTime converts an instant to an MS-DOS date and time,
// through cputime's Filetime.DosDateTime: rounded up to the next 2-second
// step as Windows rounds, and failing with ERROR_INVALID_PARAMETER outside
// 1980-01-01 to 2107-12-31 23:59:58.
func FileTimeToDosDateTime(fileTime *Filetime, fatDate *uint16, fatTime *uint16) (err error) {
	if fileTime == nil || fatDate == nil || fatTime == nil {
		return ERROR_NOACCESS
	}
	d, t, err := filetimeOf(fileTime).DosDateTime()
	if err != nil {
		return errnoOf(err)
	}
	*fatDate, *fatTime = d, t
	return nil
}

// DosDateTimeToFileTime converts an MS-DOS date and time to an instant,
// through cputime.FiletimeFromDosDateTime. Impossible fields (month 0 or
// 13-15, day 0 or past the end of the month, hour 24-31, minute 60-63,
// 60 or 62 seconds) fail with ERROR_INVALID_PARAMETER, as on Windows.
func DosDateTimeToFileTime(fatDate uint16, fatTime uint16, fileTime *Filetime) (err error) {
	if fileTime == nil {
		return ERROR_NOACCESS
	}
	f, err := cputime.FiletimeFromDosDateTime(fatDate, fatTime)
	if err != nil {
		return errnoOf(err)
	}
	storeFiletime(fileTime, f)
	return nil
}

// CompareFileTime returns -1 if *fileTime1 is earlier than *fileTime2, 0 if
// they are equal and 1 if it is later, comparing all 64 bits unsigned.
// With no error result to report it, a nil pointer panics, as it faults on
// Windows.
func CompareFileTime(fileTime1 *Filetime, fileTime2 *Filetime) int32 {
	return int32(cputime.CompareFiletime(filetimeOf(fileTime1), filetimeOf(fileTime2)))
}
