package cputime

import (
	"errors"
	"math"
	"math/big"
	"testing"
	"time"
)

var (
	firstFiletimeTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	// One tick past the largest Filetime, 2^64-1 ticks.
	pastLastFiletimeTime = time.Unix(1833029933770, 955161600)
)

// goFields gives tm's calendar fields as time.Time computes them, as an
// independent reference for our own calendar.
func goFields(tm time.Time) SystemTime {
	return SystemTime{
		Year: uint16(tm.Year()), Month: uint16(tm.Month()), DayOfWeek: uint16(tm.Weekday()),
		Day: uint16(tm.Day()), Hour: uint16(tm.Hour()), Minute: uint16(tm.Minute()),
		Second: uint16(tm.Second()), Milliseconds: uint16(tm.Nanosecond() / 1e6),
	}
}

func FuzzFiletimeTime(f *testing.F) {
	for _, v := range []uint64{0, 1, unixEpochTicks, unixEpochTicks - 1, maxInt63, 1 << 63, math.MaxUint64, math.MaxUint64 - 1} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		ft := Filetime(v)
		tm := ft.Time()
		if tm.Location() != time.UTC {
			t.Fatalf("Time() location %v, want UTC", tm.Location())
		}
		if tm.Before(firstFiletimeTime) || !tm.Before(pastLastFiletimeTime) {
			t.Fatalf("Time() = %v outside the Filetime range", tm)
		}
		back, err := FiletimeFromTime(tm)
		if err != nil || back != ft {
			t.Fatalf("FiletimeFromTime(%d.Time()) = %d, %v", v, uint64(back), err)
		}
		if s := ft.String(); s != tm.Format(time.RFC3339Nano) {
			t.Fatalf("String() = %q", s)
		}
	})
}

func FuzzTimeFiletime(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(0), int64(-1))
	f.Add(int64(-1), int64(999_999_999))
	f.Add(int64(-epochDeltaSeconds), int64(0))
	f.Add(int64(-epochDeltaSeconds-1), int64(999_999_999))
	f.Add(int64(1833029933770), int64(955161599))
	f.Add(int64(1833029933770), int64(955161600))
	f.Add(int64(math.MaxInt64), int64(999_999_999))
	f.Add(int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec)
		ft, err := FiletimeFromTime(tm)
		if tm.Before(firstFiletimeTime) || !tm.Before(pastLastFiletimeTime) {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("FiletimeFromTime(%v) = %d, %v; want ErrInvalidArgument", tm, uint64(ft), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("FiletimeFromTime(%v): %v", tm, err)
		}
		// Truncate floors to a multiple of 100 ns since year 1, which
		// agrees with 1601 and 1970 because both lie whole seconds away.
		if want := tm.Truncate(100 * time.Nanosecond); !ft.Time().Equal(want) {
			t.Fatalf("FiletimeFromTime(%v).Time() = %v, want %v", tm, ft.Time(), want)
		}
	})
}

func FuzzSystemTime(f *testing.F) {
	f.Add(uint64(0), uint16(1601), uint16(1), uint16(0), uint16(1), uint16(0), uint16(0), uint16(0), uint16(0))
	f.Add(uint64(maxInt63), uint16(30827), uint16(12), uint16(0), uint16(31), uint16(23), uint16(59), uint16(59), uint16(999))
	f.Add(uint64(1<<63), uint16(2023), uint16(2), uint16(9), uint16(29), uint16(0), uint16(0), uint16(0), uint16(0))
	f.Add(uint64(0x7fff35f4_f06c58f0), uint16(30828), uint16(1), uint16(0), uint16(1), uint16(0), uint16(0), uint16(0), uint16(0))
	f.Add(uint64(math.MaxUint64), uint16(65535), uint16(65535), uint16(65535), uint16(65535), uint16(65535), uint16(65535), uint16(65535), uint16(65535))
	f.Fuzz(func(t *testing.T, v uint64, year, month, dow, day, hour, minute, second, ms uint16) {
		// Filetime -> SystemTime -> Filetime.
		ft := Filetime(v)
		st, err := ft.SystemTime()
		if v >= 1<<63 {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Filetime(%#x).SystemTime() = %+v, %v; want ErrInvalidArgument", v, st, err)
			}
		} else {
			if err != nil {
				t.Fatalf("Filetime(%#x).SystemTime(): %v", v, err)
			}
			if want := goFields(ft.Time()); st != want {
				t.Fatalf("Filetime(%#x).SystemTime() = %+v, Go's calendar says %+v", v, st, want)
			}
			back, err := st.Filetime()
			switch {
			case st.Year > 30827:
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("%+v.Filetime() = %#x, %v; want ErrInvalidArgument for year 30828", st, uint64(back), err)
				}
			case err != nil || back != ft-ft%ticksPerMillisecond:
				t.Fatalf("%+v.Filetime() = %#x, %v; want %#x", st, uint64(back), err, uint64(ft-ft%ticksPerMillisecond))
			}
		}

		// Arbitrary fields: valid exactly when Go's calendar does not
		// normalize them and they are in Windows' ranges. The raw fields are
		// almost always invalid, so also try them folded into range, which
		// still reaches day 29-31 of short months and the year 30828.
		checkFields(t, SystemTime{year, month, dow, day, hour, minute, second, ms})
		checkFields(t, SystemTime{1601 + year%29228, 1 + month%12, dow, 1 + day%31, hour % 24, minute % 60, second % 60, ms % 1000})
	})
}

func checkFields(t *testing.T, in SystemTime) {
	t.Helper()
	got, err := in.Filetime()
	ref := time.Date(int(in.Year), time.Month(in.Month), int(in.Day), int(in.Hour), int(in.Minute), int(in.Second), int(in.Milliseconds)*1e6, time.UTC)
	valid := in.Year >= 1601 && in.Year <= 30827 && in.Month >= 1 && in.Month <= 12 && in.Day >= 1 &&
		in.Hour < 24 && in.Minute < 60 && in.Second < 60 && in.Milliseconds < 1000 &&
		ref.Year() == int(in.Year) && ref.Month() == time.Month(in.Month) && ref.Day() == int(in.Day)
	if !valid {
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%+v.Filetime() = %#x, %v; want ErrInvalidArgument", in, uint64(got), err)
		}
		return
	}
	if err != nil || !got.Time().Equal(ref) {
		t.Fatalf("%+v.Filetime() = %v, %v; want %v", in, got, err, ref)
	}
	again, err := got.SystemTime()
	in.DayOfWeek = uint16(ref.Weekday())
	if err != nil || again != in {
		t.Fatalf("round trip of %+v gave %+v, %v", in, again, err)
	}
}

func FuzzDosDateTime(f *testing.F) {
	f.Add(uint16(0x0021), uint16(0), uint64(0))
	f.Add(uint16(0xFF9F), uint16(0xBF7D), uint64(dosMaxTicks))
	f.Add(uint16(0x14CF), uint16(0x55BF), uint64(dosMaxTicks+1))
	f.Add(uint16(0x0020), uint16(0x001E), uint64(dosMinTicks))
	f.Add(uint16(43<<9|2<<5|29), uint16(0), uint64(dosMinTicks-1))
	f.Add(uint16(0xFFFF), uint16(0xFFFF), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, date, tm uint16, v uint64) {
		// MS-DOS fields -> Filetime -> MS-DOS fields, exactly.
		year, month, day := 1980+int(date>>9), int(date>>5&0xf), int(date&0x1f)
		hour, minute, second := int(tm>>11), int(tm>>5&0x3f), int(tm&0x1f)*2
		ref := time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC)
		valid := month >= 1 && month <= 12 && day >= 1 && hour < 24 && minute < 60 && second < 60 &&
			ref.Month() == time.Month(month) && ref.Day() == day
		ft, err := FiletimeFromDosDateTime(date, tm)
		if !valid {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("FiletimeFromDosDateTime(%#04x, %#04x) = %v, %v; want ErrInvalidArgument", date, tm, ft, err)
			}
		} else {
			if err != nil || !ft.Time().Equal(ref) {
				t.Fatalf("FiletimeFromDosDateTime(%#04x, %#04x) = %v, %v; want %v", date, tm, ft, err, ref)
			}
			d2, t2, err := ft.DosDateTime()
			if err != nil || d2 != date || t2 != tm {
				t.Fatalf("round trip of %#04x, %#04x gave %#04x, %#04x, %v", date, tm, d2, t2, err)
			}
		}

		// Any Filetime: accepted iff it rounds up into the MS-DOS range, and
		// then it maps to the next 2-second step at or after it.
		g := Filetime(v)
		d, tt, err := g.DosDateTime()
		if v < dosMinTicks || v > dosMaxTicks {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Filetime(%d).DosDateTime() = %#04x, %#04x, %v; want ErrInvalidArgument", v, d, tt, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Filetime(%d).DosDateTime(): %v", v, err)
		}
		up, err := FiletimeFromDosDateTime(d, tt)
		if err != nil || up < g || up-g >= 2*TicksPerSecond || (up-dosEpochTicks)%(2*TicksPerSecond) != 0 {
			t.Fatalf("Filetime(%d) -> %#04x, %#04x -> %d, %v: not the next 2 s step", v, d, tt, uint64(up), err)
		}
	})
}

func FuzzLocal(f *testing.F) {
	f.Add(uint64(unixEpochTicks), int64(14*3600))
	f.Add(uint64(unixEpochTicks), int64(-12*3600))
	f.Add(uint64(unixEpochTicks), int64(5*3600+45*60))
	f.Add(uint64(0), int64(-8*3600))
	f.Add(uint64(math.MaxUint64), int64(1))
	f.Add(uint64(math.MaxUint64), int64(math.MinInt64))
	f.Add(uint64(0), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, v uint64, off64 int64) {
		if int64(int(off64)) != off64 {
			t.Skip("offset does not fit int on this platform")
		}
		off := int(off64)
		inRange := func(x *big.Int) bool {
			return x.Sign() >= 0 && x.Cmp(new(big.Int).SetUint64(math.MaxUint64)) <= 0
		}
		shift := new(big.Int).Mul(big.NewInt(off64), big.NewInt(TicksPerSecond))
		wantLocal := new(big.Int).Add(new(big.Int).SetUint64(v), shift)
		wantUTC := new(big.Int).Sub(new(big.Int).SetUint64(v), shift)

		l, err := toLocal(Filetime(v), off)
		if !inRange(wantLocal) {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("toLocal(%d, %d) = %d, %v; want ErrInvalidArgument", v, off, uint64(l), err)
			}
		} else {
			if err != nil || uint64(l) != wantLocal.Uint64() {
				t.Fatalf("toLocal(%d, %d) = %d, %v; want %v", v, off, uint64(l), err, wantLocal)
			}
			back, err := fromLocal(l, off)
			if err != nil || uint64(back) != v {
				t.Fatalf("fromLocal(toLocal(%d, %d)) = %d, %v", v, off, uint64(back), err)
			}
		}

		u, err := fromLocal(Filetime(v), off)
		if !inRange(wantUTC) {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("fromLocal(%d, %d) = %d, %v; want ErrInvalidArgument", v, off, uint64(u), err)
			}
		} else if err != nil || uint64(u) != wantUTC.Uint64() {
			t.Fatalf("fromLocal(%d, %d) = %d, %v; want %v", v, off, uint64(u), err, wantUTC)
		}
	})
}

func FuzzTicksDuration(f *testing.F) {
	f.Add(uint64(0), int64(0))
	f.Add(uint64(TicksPerSecond), int64(time.Second))
	f.Add(uint64(math.MaxInt64/100), int64(math.MaxInt64))
	f.Add(uint64(math.MaxInt64/100+1), int64(-1))
	f.Add(uint64(math.MaxUint64), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, v uint64, d64 int64) {
		tk := Ticks(v)
		dur, err := tk.Duration()
		_ = tk.String()
		if v > math.MaxInt64/100 {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Ticks(%d).Duration() = %v, %v; want ErrInvalidArgument", v, dur, err)
			}
		} else {
			if err != nil || int64(dur) != int64(v)*100 {
				t.Fatalf("Ticks(%d).Duration() = %v, %v", v, dur, err)
			}
			back, err := TicksFromDuration(dur)
			if err != nil || back != tk {
				t.Fatalf("TicksFromDuration(Ticks(%d).Duration()) = %d, %v", v, uint64(back), err)
			}
			if tk.String() != dur.String() {
				t.Fatalf("Ticks(%d).String() = %q, want %q", v, tk.String(), dur.String())
			}
		}

		d := time.Duration(d64)
		got, err := TicksFromDuration(d)
		if d < 0 {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("TicksFromDuration(%v) = %d, %v; want ErrInvalidArgument", d, uint64(got), err)
			}
			return
		}
		back, err2 := got.Duration()
		if err != nil || err2 != nil || back != d-d%100 {
			t.Fatalf("TicksFromDuration(%v) = %d (%v), %v, %v; want %v", d, uint64(got), back, err, err2, d-d%100)
		}
	})
}
