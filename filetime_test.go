package cputime

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Known values below are computed independently of the code under test:
// by hand, with time.Date, or taken from Wine's kernel32 tests, which pass
// on native Windows (dlls/kernel32/tests/time.c).
const (
	unixEpochTicks = 116_444_736_000_000_000 // 1970-01-01, 11644473600 s after 1601
	maxInt63       = 1<<63 - 1
)

func utc(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
}

func mustInvalid(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want ErrInvalidArgument", what)
	}
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%s: error %q does not wrap ErrInvalidArgument", what, err)
	}
}

func TestFiletimeKnownValues(t *testing.T) {
	tests := []struct {
		name string
		f    Filetime
		time time.Time
	}{
		{"1601 epoch", 0, utc(1601, 1, 1, 0, 0, 0, 0)},
		{"one tick", 1, utc(1601, 1, 1, 0, 0, 0, 100)},
		{"unix epoch", unixEpochTicks, utc(1970, 1, 1, 0, 0, 0, 0)},
		{"unix epoch + 1 s", unixEpochTicks + TicksPerSecond, utc(1970, 1, 1, 0, 0, 1, 0)},
		{"unix epoch - 1 tick", unixEpochTicks - 1, utc(1969, 12, 31, 23, 59, 59, 999_999_900)},
		// Wine test constants, checked on native Windows.
		{"wine NEWYEAR_1980", 0x01a8e79f_e1d58000, utc(1980, 1, 1, 0, 0, 0, 0)},
		{"wine MAYDAY_2002", 0x01c1f107_b82b6000, utc(2002, 5, 1, 12, 0, 0, 0)},
		{"wine ATIME", 0x01c2349b_580716b0, utc(2002, 7, 26, 11, 55, 32, 123_000_000)},
		{"1900-03-01 (1900 not leap)", Filetime(uint64(109266) * ticksPerDay), utc(1900, 3, 1, 0, 0, 0, 0)},
		{"2^63-1", maxInt63, utc(30828, 9, 14, 2, 48, 5, 477_580_700)},
		{"2^63", 1 << 63, utc(30828, 9, 14, 2, 48, 5, 477_580_800)},
		{"max uint64", math.MaxUint64, utc(60056, 5, 28, 5, 36, 10, 955_161_500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.f.Time()
			if !got.Equal(tt.time) || got.Location() != time.UTC {
				t.Errorf("Filetime(%d).Time() = %v (%v), want %v UTC", uint64(tt.f), got, got.Location(), tt.time)
			}
			back, err := FiletimeFromTime(tt.time)
			if err != nil || back != tt.f {
				t.Errorf("FiletimeFromTime(%v) = %d, %v; want %d", tt.time, uint64(back), err, uint64(tt.f))
			}
		})
	}
}

func TestFiletimeIndependentOfCode(t *testing.T) {
	// Days from 1601-01-01 counted by time.Time itself, not by our calendar.
	for _, tm := range []time.Time{
		utc(1601, 1, 1, 0, 0, 0, 0), utc(1700, 2, 28, 12, 0, 0, 0),
		utc(1900, 2, 28, 0, 0, 0, 0), utc(2000, 2, 29, 23, 59, 59, 999_999_900),
		utc(2100, 3, 1, 0, 0, 0, 0), utc(1969, 7, 20, 20, 17, 40, 0),
	} {
		// Whole days via Go's calendar, year by year (a Duration from 1601
		// would overflow).
		days := uint64(tm.YearDay() - 1)
		for y := 1601; y < tm.Year(); y++ {
			days += uint64(utc(y, 12, 31, 0, 0, 0, 0).YearDay())
		}
		midnight := utc(tm.Year(), tm.Month(), tm.Day(), 0, 0, 0, 0)
		want := Filetime(days*ticksPerDay + uint64(tm.Sub(midnight)/100))
		got, err := FiletimeFromTime(tm)
		if err != nil || got != want {
			t.Errorf("FiletimeFromTime(%v) = %d, %v; want %d", tm, uint64(got), err, uint64(want))
		}
	}
}

func TestFiletimeFromTimeTruncates(t *testing.T) {
	tests := []struct {
		in   time.Time
		want Filetime
	}{
		{time.Unix(0, 99), unixEpochTicks},
		{time.Unix(0, 199), unixEpochTicks + 1},
		// Pre-1970: floor, not toward zero. -1 ns is 1969-12-31 23:59:59.999999999.
		{time.Unix(0, -1), unixEpochTicks - 1},
		{time.Unix(0, -100), unixEpochTicks - 1},
		{time.Unix(0, -101), unixEpochTicks - 2},
		{time.Unix(-1, 50), unixEpochTicks - TicksPerSecond},
		{utc(1601, 1, 1, 0, 0, 0, 99), 0},
		{time.Unix(1833029933770, 955161599), math.MaxUint64},
	}
	for _, tt := range tests {
		got, err := FiletimeFromTime(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("FiletimeFromTime(%v) = %d, %v; want %d", tt.in, uint64(got), err, uint64(tt.want))
		}
	}
}

func TestFiletimeFromTimeRange(t *testing.T) {
	for _, tm := range []time.Time{
		utc(1600, 12, 31, 23, 59, 59, 999_999_999),
		time.Time{}, // year 1
		time.Unix(math.MinInt64, 0),
		time.Unix(math.MaxInt64, 999_999_999),
		time.Unix(1833029933770, 955161600), // one tick past 2^64-1
		time.Unix(1833029933771, 0),
		utc(60057, 1, 1, 0, 0, 0, 0),
	} {
		_, err := FiletimeFromTime(tm)
		mustInvalid(t, err, "FiletimeFromTime("+tm.String()+")")
	}
	// Time zones do not matter: it is an instant.
	east := time.FixedZone("east", 14*3600)
	got, err := FiletimeFromTime(time.Date(1970, 1, 1, 14, 0, 0, 0, east))
	if err != nil || got != unixEpochTicks {
		t.Errorf("FiletimeFromTime(+14:00) = %d, %v; want %d", uint64(got), err, uint64(unixEpochTicks))
	}
}

func TestFiletimeString(t *testing.T) {
	tests := []struct {
		f    Filetime
		want string
	}{
		{0, "1601-01-01T00:00:00Z"},
		{unixEpochTicks, "1970-01-01T00:00:00Z"},
		{0x01c2349b_580716b0, "2002-07-26T11:55:32.123Z"},
		{maxInt63, "30828-09-14T02:48:05.4775807Z"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("Filetime(%d).String() = %q, want %q", uint64(tt.f), got, tt.want)
		}
	}
}

func TestFiletimeTicksParts(t *testing.T) {
	f := FiletimeFromParts(0x580716b0, 0x01c2349b) // Wine's ATIME
	if f != 0x01c2349b_580716b0 {
		t.Fatalf("FiletimeFromParts = %#x", uint64(f))
	}
	if lo, hi := f.Parts(); lo != 0x580716b0 || hi != 0x01c2349b {
		t.Errorf("Parts() = %#x, %#x", lo, hi)
	}
	if lo, hi := Filetime(math.MaxUint64).Parts(); lo != math.MaxUint32 || hi != math.MaxUint32 {
		t.Errorf("max Parts() = %#x, %#x", lo, hi)
	}
	tk := TicksFromParts(0x00989680, 0) // 10,000,000 = 1 s
	if tk != TicksPerSecond {
		t.Fatalf("TicksFromParts = %d", uint64(tk))
	}
	if lo, hi := Ticks(1<<32 | 7).Parts(); lo != 7 || hi != 1 {
		t.Errorf("Ticks.Parts() = %d, %d", lo, hi)
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		ticks Ticks
		d     time.Duration
		str   string
	}{
		{0, 0, "0s"},
		{1, 100 * time.Nanosecond, "100ns"},
		{TicksPerSecond, time.Second, "1s"}, // the seed doc's example: 1 s = 10,000,000 ticks
		{15_000_000, 1500 * time.Millisecond, "1.5s"},
		{36_000_000_000, time.Hour, "1h0m0s"},
		{math.MaxInt64 / 100, time.Duration(math.MaxInt64 / 100 * 100), "2562047h47m16.8547758s"},
	}
	for _, tt := range tests {
		d, err := tt.ticks.Duration()
		if err != nil || d != tt.d {
			t.Errorf("Ticks(%d).Duration() = %v, %v; want %v", uint64(tt.ticks), d, err, tt.d)
		}
		if s := tt.ticks.String(); s != tt.str {
			t.Errorf("Ticks(%d).String() = %q, want %q", uint64(tt.ticks), s, tt.str)
		}
		back, err := TicksFromDuration(tt.d)
		if err != nil || back != tt.ticks {
			t.Errorf("TicksFromDuration(%v) = %d, %v", tt.d, uint64(back), err)
		}
	}

	// Past 292 years a Duration cannot hold it; x/sys/windows would wrap.
	for _, tk := range []Ticks{math.MaxInt64/100 + 1, 1 << 63, math.MaxUint64} {
		_, err := tk.Duration()
		mustInvalid(t, err, "Ticks.Duration")
	}
	if s := Ticks(math.MaxUint64).String(); s != "18446744073709551615 ticks" {
		t.Errorf("max Ticks.String() = %q", s)
	}

	// Truncation toward zero to 100 ns.
	if tk, _ := TicksFromDuration(199); tk != 1 {
		t.Errorf("TicksFromDuration(199ns) = %d, want 1", uint64(tk))
	}
	if tk, _ := TicksFromDuration(math.MaxInt64); tk != math.MaxInt64/100 {
		t.Errorf("TicksFromDuration(max) = %d", uint64(tk))
	}
	for _, d := range []time.Duration{-1, -100, math.MinInt64} {
		_, err := TicksFromDuration(d)
		mustInvalid(t, err, "TicksFromDuration("+d.String()+")")
	}
}

func TestCompareFiletime(t *testing.T) {
	tests := []struct {
		a, b Filetime
		want int
	}{
		{0, 0, 0}, {0, 1, -1}, {1, 0, 1},
		{math.MaxUint64, 0, 1}, {1 << 63, maxInt63, 1}, // unsigned, not signed
		{math.MaxUint64, math.MaxUint64, 0},
	}
	for _, tt := range tests {
		if got := CompareFiletime(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareFiletime(%d, %d) = %d, want %d", uint64(tt.a), uint64(tt.b), got, tt.want)
		}
	}
}

func TestSystemTimeKnownValues(t *testing.T) {
	tests := []struct {
		f  Filetime
		st SystemTime
	}{
		{0, SystemTime{1601, 1, 1, 1, 0, 0, 0, 0}},                               // a Monday
		{unixEpochTicks + TicksPerSecond, SystemTime{1970, 1, 4, 1, 0, 0, 1, 0}}, // Thursday
		{0x01c2349b_580716b0, SystemTime{2002, 7, 5, 26, 11, 55, 32, 123}},       // Friday
		{0x01a8e79f_e1d58000, SystemTime{1980, 1, 2, 1, 0, 0, 0, 0}},             // Tuesday
		// Last millisecond of the documented SYSTEMTIME range; Windows gives
		// 0x7fff35f4f06c58f0 (Stack Overflow 9999393).
		{0x7fff35f4_f06c58f0, SystemTime{30827, 12, 5, 31, 23, 59, 59, 999}},
	}
	for _, tt := range tests {
		st, err := tt.f.SystemTime()
		if err != nil || st != tt.st {
			t.Errorf("Filetime(%#x).SystemTime() = %+v, %v; want %+v", uint64(tt.f), st, err, tt.st)
		}
		back, err := tt.st.Filetime()
		if err != nil || back != tt.f {
			t.Errorf("%+v.Filetime() = %#x, %v; want %#x", tt.st, uint64(back), err, uint64(tt.f))
		}
	}

	// Milliseconds truncate; 2^63-1 still converts, to year 30828.
	st, err := Filetime(maxInt63).SystemTime()
	want := SystemTime{30828, 9, 4, 14, 2, 48, 5, 477}
	if err != nil || st != want {
		t.Errorf("SystemTime(2^63-1) = %+v, %v; want %+v", st, err, want)
	}
	for _, f := range []Filetime{1 << 63, 1<<63 + 1, math.MaxUint64} {
		_, err := f.SystemTime()
		mustInvalid(t, err, "SystemTime(>= 2^63)")
	}
}

// TestSystemTimeAgainstGoCalendar compares every field with time.Time's
// own calendar over days spread across the whole range, and every day of
// the leap-year edge cases.
func TestSystemTimeAgainstGoCalendar(t *testing.T) {
	check := func(tm time.Time) {
		t.Helper()
		f, err := FiletimeFromTime(tm)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.SystemTime()
		if err != nil {
			t.Fatal(err)
		}
		want := SystemTime{
			Year: uint16(tm.Year()), Month: uint16(tm.Month()), DayOfWeek: uint16(tm.Weekday()),
			Day: uint16(tm.Day()), Hour: uint16(tm.Hour()), Minute: uint16(tm.Minute()),
			Second: uint16(tm.Second()), Milliseconds: uint16(tm.Nanosecond() / 1e6),
		}
		if st != want {
			t.Fatalf("%v: SystemTime() = %+v, want %+v", tm, st, want)
		}
		st.DayOfWeek = 6 // ignored by Windows and by us
		back, err := st.Filetime()
		if err != nil || back != f-f%ticksPerMillisecond {
			t.Fatalf("%v: %+v.Filetime() = %d, %v; want %d", tm, st, uint64(back), err, uint64(f-f%ticksPerMillisecond))
		}
	}
	for _, y := range []int{1601, 1604, 1700, 1800, 1900, 1999, 2000, 2001, 2024, 2100, 2400, 30827} {
		for d := utc(y, 1, 1, 23, 59, 59, 999_999_999); d.Year() == y; d = d.AddDate(0, 0, 1) {
			check(d)
		}
	}
	// A stride that is not a divisor of any calendar cycle, through 30827.
	for d := utc(1601, 1, 1, 0, 0, 0, 0); d.Year() <= 30827; d = d.Add(37*24*time.Hour + 3*time.Hour + 17*time.Minute + 31_123_456_789) {
		check(d)
	}
}

func TestSystemTimeFiletimeValidation(t *testing.T) {
	ok := SystemTime{Year: 2024, Month: 2, Day: 29, Hour: 23, Minute: 59, Second: 59, Milliseconds: 999}
	if _, err := ok.Filetime(); err != nil {
		t.Fatalf("2024-02-29 (leap) rejected: %v", err)
	}
	for _, leap := range []uint16{1604, 2000, 2400} {
		if _, err := (SystemTime{Year: leap, Month: 2, Day: 29}).Filetime(); err != nil {
			t.Errorf("%d-02-29 rejected: %v", leap, err)
		}
	}
	first := SystemTime{Year: 1601, Month: 1, Day: 1}
	if f, err := first.Filetime(); err != nil || f != 0 {
		t.Errorf("1601-01-01 = %d, %v", uint64(f), err)
	}

	bad := map[string]SystemTime{
		"year 1600 (Wine's EARLY)": {Year: 1600, Month: 12, Day: 31, Hour: 23, Minute: 59, Second: 59, Milliseconds: 999},
		"year 0":                   {Year: 0, Month: 1, Day: 1},
		"year 30828":               {Year: 30828, Month: 1, Day: 1},
		"year 65535":               {Year: 65535, Month: 1, Day: 1},
		"month 0 (Wine)":           {Year: 1980, Month: 0, Day: 1},
		"month 13":                 {Year: 1980, Month: 13, Day: 1},
		"day 0":                    {Year: 1980, Month: 1, Day: 0},
		"day 32":                   {Year: 1980, Month: 1, Day: 32},
		"April 31":                 {Year: 1980, Month: 4, Day: 31},
		"Feb 30 leap":              {Year: 2000, Month: 2, Day: 30},
		"Feb 29 common 2023":       {Year: 2023, Month: 2, Day: 29},
		"Feb 29 1900 not leap":     {Year: 1900, Month: 2, Day: 29},
		"Feb 29 2100 not leap":     {Year: 2100, Month: 2, Day: 29},
		"hour 24 (Wine)":           {Year: 1980, Month: 1, Day: 1, Hour: 24},
		"minute 60 (Wine)":         {Year: 1980, Month: 1, Day: 1, Minute: 60},
		"second 60":                {Year: 1980, Month: 1, Day: 1, Second: 60},
		"ms 1000":                  {Year: 1980, Month: 1, Day: 1, Milliseconds: 1000},
		"all max":                  {65535, 65535, 65535, 65535, 65535, 65535, 65535, 65535},
	}
	for name, st := range bad {
		_, err := st.Filetime()
		mustInvalid(t, err, name)
	}
}

func TestLocal(t *testing.T) {
	const hour = 3600 * TicksPerSecond
	tests := []struct {
		name   string
		offset int
		utc    Filetime
		local  Filetime
	}{
		{"UTC", 0, unixEpochTicks, unixEpochTicks},
		{"+14:00 Kiribati", 14 * 3600, unixEpochTicks, unixEpochTicks + 14*hour},
		{"-12:00 Baker Island", -12 * 3600, unixEpochTicks, unixEpochTicks - 12*hour},
		{"+05:45 Nepal", 5*3600 + 45*60, unixEpochTicks, unixEpochTicks + 5*hour + 45*60*TicksPerSecond},
		{"+08:00 at 1601, Raymond Chen's case", 8 * 3600, 0, 8 * hour},
		{"-08:00 at max", -8 * 3600, math.MaxUint64, math.MaxUint64 - 8*hour},
	}
	for _, tt := range tests {
		l, err := toLocal(tt.utc, tt.offset)
		if err != nil || l != tt.local {
			t.Errorf("%s: toLocal = %d, %v; want %d", tt.name, uint64(l), err, uint64(tt.local))
		}
		u, err := fromLocal(tt.local, tt.offset)
		if err != nil || u != tt.utc {
			t.Errorf("%s: fromLocal = %d, %v; want %d", tt.name, uint64(u), err, uint64(tt.utc))
		}
	}

	// Windows wraps here (FT2LFT returns TRUE for 1601 at UTC-8); we fail.
	_, err := toLocal(0, -8*3600)
	mustInvalid(t, err, "toLocal(0, -8h)")
	_, err = toLocal(math.MaxUint64, 1)
	mustInvalid(t, err, "toLocal(max, +1s)")
	_, err = fromLocal(0, 1)
	mustInvalid(t, err, "fromLocal(0, +1s)")
	_, err = fromLocal(math.MaxUint64, -1)
	mustInvalid(t, err, "fromLocal(max, -1s)")
	// Offsets at the ends of int: MinInt has no positive counterpart, and
	// on 64-bit platforms MaxInt seconds overflow the tick multiplication.
	_, err = toLocal(0, math.MinInt)
	mustInvalid(t, err, "toLocal(0, MinInt)")
	_, err = toLocal(math.MaxUint64, math.MaxInt)
	mustInvalid(t, err, "toLocal(max, MaxInt)")
	_, err = fromLocal(0, math.MaxInt)
	mustInvalid(t, err, "fromLocal(0, MaxInt)")
	_, err = fromLocal(math.MaxUint64, math.MinInt)
	mustInvalid(t, err, "fromLocal(max, MinInt)")
}

func TestLocalUsesCurrentOffset(t *testing.T) {
	// The exported pair must use the zone offset in force now, whatever the
	// date converted. Skip if the offset changes while the test runs.
	_, before := time.Now().Zone()
	l, err := Filetime(unixEpochTicks).ToLocal()
	_, after := time.Now().Zone()
	if before != after {
		t.Skip("zone offset changed during the test")
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := Filetime(int64(unixEpochTicks) + int64(before)*TicksPerSecond); l != want {
		t.Errorf("ToLocal() = %d, want %d (offset %d s)", uint64(l), uint64(want), before)
	}
	u, err := LocalToFiletime(l)
	if err != nil || u != unixEpochTicks {
		t.Errorf("LocalToFiletime(ToLocal(x)) = %d, %v; want %d", uint64(u), err, uint64(unixEpochTicks))
	}
}

func TestDosDateTime(t *testing.T) {
	mustTicks := func(tm time.Time) Filetime {
		f, err := FiletimeFromTime(tm)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tests := []struct {
		name     string
		f        Filetime
		date, tm uint16
	}{
		{"1980-01-01 (Wine, PAL)", 0x01a8e79f_e1d58000, 0x0021, 0x0000},
		// By hand: (2107-1980)<<9 | 12<<5 | 31 = 0xFF9F; 23<<11 | 59<<5 | 58/2 = 0xBF7D.
		{"2107-12-31 23:59:58", mustTicks(utc(2107, 12, 31, 23, 59, 58, 0)), 0xFF9F, 0xBF7D},
		{"2037-12-31 23:59:58 (PAL)", 0x01e9eede_b9de1300, 0x739F, 0xBF7D},
		// .NET PAL test vectors for Windows: odd seconds round UP.
		{"1990-06-15 10:45:30 (PAL)", 0x01b4a02c_9be00100, 0x14CF, 0x55AF},
		{"1990-06-15 10:45:29 rounds up (PAL)", 0x01b4a02c_9b476a80, 0x14CF, 0x55AF},
		{"1990-06-15 10:45:31 rounds up (PAL)", 0x01b4a02c_9c789780, 0x14CF, 0x55B0},
		{"sub-second rounds up", mustTicks(utc(1990, 6, 15, 10, 45, 30, 100)), 0x14CF, 0x55B0},
		{"1979-12-31 23:59:58 + 1 tick rounds into 1980", mustTicks(utc(1979, 12, 31, 23, 59, 58, 100)), 0x0021, 0x0000},
		{"round up across midnight and year", mustTicks(utc(1999, 12, 31, 23, 59, 59, 0)), 20<<9 | 1<<5 | 1, 0},
		{"2000-02-29 leap", mustTicks(utc(2000, 2, 29, 12, 30, 10, 0)), 20<<9 | 2<<5 | 29, 12<<11 | 30<<5 | 5},
		{"2100-03-01 (2100 not leap)", mustTicks(utc(2100, 3, 1, 0, 0, 0, 0)), 120<<9 | 3<<5 | 1, 0},
	}
	for _, tt := range tests {
		d, tm, err := tt.f.DosDateTime()
		if err != nil || d != tt.date || tm != tt.tm {
			t.Errorf("%s: DosDateTime() = %#04x, %#04x, %v; want %#04x, %#04x", tt.name, d, tm, err, tt.date, tt.tm)
		}
	}

	for name, f := range map[string]Filetime{
		"1601 (Wine test on Windows)":        0,
		"1979-12-31 23:59:58 (PAL)":          0x01a8e79f_e0a45300,
		"2107-12-31 23:59:58 + 1 tick (PAL)": 0x023868b8_66d29301,
		"2108-01-01":                         mustTicks(utc(2108, 1, 1, 0, 0, 0, 0)),
		"2^63":                               1 << 63,
		"max":                                math.MaxUint64,
	} {
		_, _, err := f.DosDateTime()
		mustInvalid(t, err, name)
	}
}

func TestFiletimeFromDosDateTime(t *testing.T) {
	tests := []struct {
		date, tm uint16
		want     time.Time
	}{
		{0x0021, 0x0000, utc(1980, 1, 1, 0, 0, 0, 0)},
		{0xFF9F, 0xBF7D, utc(2107, 12, 31, 23, 59, 58, 0)},
		{0x14CF, 0x55AF, utc(1990, 6, 15, 10, 45, 30, 0)},
		{20<<9 | 2<<5 | 29, 0, utc(2000, 2, 29, 0, 0, 0, 0)},
		{0x14CF, 0x001D, utc(1990, 6, 15, 0, 0, 58, 0)},
	}
	for _, tt := range tests {
		f, err := FiletimeFromDosDateTime(tt.date, tt.tm)
		if err != nil || !f.Time().Equal(tt.want) {
			t.Errorf("FiletimeFromDosDateTime(%#04x, %#04x) = %v, %v; want %v", tt.date, tt.tm, f, err, tt.want)
		}
	}

	// The PAL's distance test: 0x55AF and 0x55B0 are 2 s apart.
	a, _ := FiletimeFromDosDateTime(0x14CF, 0x55AF)
	b, _ := FiletimeFromDosDateTime(0x14CF, 0x55B0)
	if b-a != 2*TicksPerSecond {
		t.Errorf("0x55B0 - 0x55AF = %d ticks, want 2 s", uint64(b-a))
	}

	const okDate, okTime = 0x14CF, 0x55AF
	bad := []struct {
		name     string
		date, tm uint16
	}{
		{"62 seconds (PAL 0x55BF)", okDate, 0x55BF},
		{"60 seconds", okDate, 0x55BE},
		{"minute 60 (PAL 0x0F81)", okDate, 0x0F81},
		{"minute 63", okDate, 63 << 5},
		{"hour 24 (PAL 0xC021)", okDate, 0xC021},
		{"hour 31", okDate, 31 << 11},
		{"month 15 (PAL 0x29EF)", 0x29EF, okTime},
		{"month 13", 13<<5 | 1, okTime},
		{"month 0", 0<<5 | 1, okTime},
		{"day 0 (PAL 0x2820)", 0x2820, okTime},
		{"date 0", 0, 0},
		{"April 31", 4<<5 | 31, okTime},
		{"Feb 29 common year 2023", 43<<9 | 2<<5 | 29, okTime},
		{"Feb 29 2100 not leap", 120<<9 | 2<<5 | 29, okTime},
		{"Feb 30 leap year", 20<<9 | 2<<5 | 30, okTime},
		{"all ones", 0xFFFF, 0xFFFF},
	}
	for _, tt := range bad {
		_, err := FiletimeFromDosDateTime(tt.date, tt.tm)
		mustInvalid(t, err, tt.name)
		if err != nil && !strings.Contains(err.Error(), "MS-DOS") {
			t.Errorf("%s: error %q lacks context", tt.name, err)
		}
	}
}
