package win32_test

import (
	"testing"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/win32"
)

func ft64(v uint64) win32.Filetime {
	return win32.Filetime{LowDateTime: uint32(v), HighDateTime: uint32(v >> 32)}
}

func ftAt(t *testing.T, tm time.Time) win32.Filetime {
	t.Helper()
	f, err := cputime.FiletimeFromTime(tm)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := f.Parts()
	return win32.Filetime{LowDateTime: lo, HighDateTime: hi}
}

func date(y int, m time.Month, d, h, mi, s, ms int) time.Time {
	return time.Date(y, m, d, h, mi, s, ms*1e6, time.UTC)
}

func TestFileTimeToSystemTimeRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		ft   win32.Filetime
		want win32.Systemtime
	}{
		{"zero", ft64(0), win32.Systemtime{Year: 1601, Month: 1, DayOfWeek: 1, Day: 1}},
		{"leap day", ftAt(t, date(2024, 2, 29, 12, 34, 56, 789)), win32.Systemtime{Year: 2024, Month: 2, DayOfWeek: 4, Day: 29, Hour: 12, Minute: 34, Second: 56, Milliseconds: 789}},
		{"2^63-1", ft64(1<<63 - 1), win32.Systemtime{Year: 30828, Month: 9, DayOfWeek: 4, Day: 14, Hour: 2, Minute: 48, Second: 5, Milliseconds: 477}},
	} {
		var st win32.Systemtime
		if err := win32.FileTimeToSystemTime(&tc.ft, &st); err != nil || st != tc.want {
			t.Errorf("%s: FileTimeToSystemTime = %+v, %v; want %+v", tc.name, st, err, tc.want)
		}
	}
	for _, v := range []uint64{1 << 63, 1<<64 - 1} {
		ft := ft64(v)
		var st win32.Systemtime
		if err := win32.FileTimeToSystemTime(&ft, &st); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("FileTimeToSystemTime(%#x) = %+v, %v; want ERROR_INVALID_PARAMETER", v, st, err)
		}
	}
}

func TestSystemTimeToFileTimeValidation(t *testing.T) {
	good := win32.Systemtime{Year: 2024, Month: 2, Day: 29, Hour: 12, Minute: 34, Second: 56, Milliseconds: 789}
	var ft win32.Filetime
	if err := win32.SystemTimeToFileTime(&good, &ft); err != nil || ft != ftAt(t, date(2024, 2, 29, 12, 34, 56, 789)) {
		t.Errorf("SystemTimeToFileTime(%+v) = %#x, %v", good, ft, err)
	}
	last := win32.Systemtime{Year: 30827, Month: 12, Day: 31, Hour: 23, Minute: 59, Second: 59, Milliseconds: 999}
	if err := win32.SystemTimeToFileTime(&last, &ft); err != nil || ft != ft64(0x7fff35f4f06c58f0) {
		t.Errorf("SystemTimeToFileTime(30827-12-31 23:59:59.999) = %#x, %v; want 0x7fff35f4f06c58f0", ft, err)
	}
	for _, tc := range []struct {
		name string
		st   win32.Systemtime
	}{
		{"month 13", win32.Systemtime{Year: 2024, Month: 13, Day: 1}},
		{"month 0", win32.Systemtime{Year: 2024, Month: 0, Day: 1}},
		{"day 0", win32.Systemtime{Year: 2024, Month: 1, Day: 0}},
		{"April 31", win32.Systemtime{Year: 2024, Month: 4, Day: 31}},
		{"hour 24", win32.Systemtime{Year: 2024, Month: 1, Day: 1, Hour: 24}},
		{"minute 60", win32.Systemtime{Year: 2024, Month: 1, Day: 1, Minute: 60}},
		{"second 60", win32.Systemtime{Year: 2024, Month: 1, Day: 1, Second: 60}},
		{"1000 ms", win32.Systemtime{Year: 2024, Month: 1, Day: 1, Milliseconds: 1000}},
		{"year 1600", win32.Systemtime{Year: 1600, Month: 12, Day: 31}},
	} {
		ft := ft64(42)
		if err := win32.SystemTimeToFileTime(&tc.st, &ft); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("SystemTimeToFileTime(%s) = %#x, %v; want ERROR_INVALID_PARAMETER", tc.name, ft, err)
		}
	}
	t.Run("Feb29CommonYear", func(t *testing.T) {
		skipOnWine(t, "Wine 8 accepts February 29 of a common year, which Windows rejects")
		st := win32.Systemtime{Year: 2023, Month: 2, Day: 29}
		if err := win32.SystemTimeToFileTime(&st, &ft); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("SystemTimeToFileTime(2023-02-29) = %#x, %v; want ERROR_INVALID_PARAMETER", ft, err)
		}
	})
}

func TestDosDateTimeRange(t *testing.T) {
	for _, tc := range []struct {
		at         time.Time
		date, time uint16
	}{
		{date(1980, 1, 1, 0, 0, 0, 0), 0x0021, 0},
		{date(2107, 12, 31, 23, 59, 58, 0), 127<<9 | 12<<5 | 31, 23<<11 | 59<<5 | 29},
		{date(2024, 2, 29, 10, 45, 30, 0), 44<<9 | 2<<5 | 29, 10<<11 | 45<<5 | 15},
	} {
		ft := ftAt(t, tc.at)
		var d, tm uint16
		if err := win32.FileTimeToDosDateTime(&ft, &d, &tm); err != nil || d != tc.date || tm != tc.time {
			t.Errorf("FileTimeToDosDateTime(%v) = %#04x %#04x, %v; want %#04x %#04x", tc.at, d, tm, err, tc.date, tc.time)
		}
		var back win32.Filetime
		if err := win32.DosDateTimeToFileTime(tc.date, tc.time, &back); err != nil || back != ft {
			t.Errorf("DosDateTimeToFileTime(%#04x, %#04x) = %#x, %v; want %#x", tc.date, tc.time, back, err, ft)
		}
	}
	before := ftAt(t, date(1979, 12, 31, 23, 59, 58, 0))
	var d, tm uint16
	if err := win32.FileTimeToDosDateTime(&before, &d, &tm); err != win32.ERROR_INVALID_PARAMETER {
		t.Errorf("FileTimeToDosDateTime(1979-12-31 23:59:58) = %#04x %#04x, %v; want ERROR_INVALID_PARAMETER", d, tm, err)
	}
	t.Run("After2107", func(t *testing.T) {
		skipOnWine(t, "Wine 8 accepts years past 2107 (it wraps the year field), where Windows fails")
		after := ftAt(t, date(2108, 1, 1, 0, 0, 0, 0))
		if err := win32.FileTimeToDosDateTime(&after, &d, &tm); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("FileTimeToDosDateTime(2108-01-01) = %#04x %#04x, %v; want ERROR_INVALID_PARAMETER", d, tm, err)
		}
	})
	t.Run("RoundsUp", func(t *testing.T) {
		skipOnWine(t, "Wine 8 truncates to the 2-second step, where Windows rounds up")
		odd := ftAt(t, date(2024, 2, 29, 10, 45, 31, 0))
		if err := win32.FileTimeToDosDateTime(&odd, &d, &tm); err != nil || tm != 10<<11|45<<5|16 {
			t.Errorf("FileTimeToDosDateTime(10:45:31) = time %#04x, %v; want 10:45:32", tm, err)
		}
	})
	for _, tc := range []struct {
		name       string
		date, time uint16
	}{
		{"month 13", 44<<9 | 13<<5 | 1, 0},
		{"month 0", 44<<9 | 0<<5 | 1, 0},
		{"day 0", 44<<9 | 1<<5 | 0, 0},
		{"hour 24", 44<<9 | 1<<5 | 1, 24 << 11},
		{"minute 60", 44<<9 | 1<<5 | 1, 60 << 5},
		{"62 seconds", 44<<9 | 1<<5 | 1, 31},
	} {
		var ft win32.Filetime
		err := win32.DosDateTimeToFileTime(tc.date, tc.time, &ft)
		if runningOnWine() && err != nil && err != win32.ERROR_INVALID_PARAMETER {
			// Wine 8 fails without setting the last error, which x/sys
			// reports as EINVAL; Windows sets ERROR_INVALID_PARAMETER.
			t.Logf("under Wine: DosDateTimeToFileTime(%s) fails with %v", tc.name, err)
			continue
		}
		if err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("DosDateTimeToFileTime(%s) = %#x, %v; want ERROR_INVALID_PARAMETER", tc.name, ft, err)
		}
	}
	t.Run("Feb29CommonYear", func(t *testing.T) {
		skipOnWine(t, "Wine 8 accepts February 29 of a common year, which Windows rejects")
		var ft win32.Filetime
		if err := win32.DosDateTimeToFileTime(1<<9|2<<5|29, 0, &ft); err != win32.ERROR_INVALID_PARAMETER {
			t.Errorf("DosDateTimeToFileTime(1981-02-29) = %#x, %v; want ERROR_INVALID_PARAMETER", ft, err)
		}
	})
}

func TestLocalFileTimeRoundTrip(t *testing.T) {
	utc := ftAt(t, date(2024, 2, 29, 12, 0, 0, 0))
	var local, back win32.Filetime
	if err := win32.FileTimeToLocalFileTime(&utc, &local); err != nil {
		t.Fatal(err)
	}
	if err := win32.LocalFileTimeToFileTime(&local, &back); err != nil || back != utc {
		t.Errorf("local %#x back to %#x, %v; want %#x", local, back, err, utc)
	}
	offset := time.Duration(cputime.FiletimeFromParts(local.LowDateTime, local.HighDateTime)-
		cputime.FiletimeFromParts(utc.LowDateTime, utc.HighDateTime)) * 100
	if offset.Abs() > 26*time.Hour || offset%time.Minute != 0 {
		t.Errorf("local offset %v", offset)
	}
}

func TestCompareFileTimeOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b win32.Filetime
		want int32
	}{
		{ft64(1), ft64(2), -1},
		{ft64(2), ft64(1), 1},
		{ft64(1 << 40), ft64(1 << 40), 0},
		{ft64(1 << 63), ft64(1<<63 - 1), 1}, // unsigned: 2^63 is the later
		{ft64(1<<32 | 1), ft64(2), 1},       // the high half decides first
		{ft64(1<<64 - 1), ft64(0), 1},
	} {
		if got := win32.CompareFileTime(&tc.a, &tc.b); got != tc.want {
			t.Errorf("CompareFileTime(%#x, %#x) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNsecToFiletime(t *testing.T) {
	ft := win32.NsecToFiletime(0)
	if ft != ft64(116444736000000000) {
		t.Errorf("NsecToFiletime(0) = %#x; want 1970-01-01", ft)
	}
	at := date(2024, 2, 29, 12, 34, 56, 789)
	ft = win32.NsecToFiletime(at.UnixNano())
	if ft != ftAt(t, at) || ft.Nanoseconds() != at.UnixNano() {
		t.Errorf("NsecToFiletime(%v) = %#x, back %d", at, ft, ft.Nanoseconds())
	}
}
