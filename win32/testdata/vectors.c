/* Prints what the Win32 time conversions return for a fixed list of inputs,
 * one line per call, for win32/testdata/vectors.txt:
 *
 *   FUNCTION ARGS -> RESULT
 *
 * FILETIMEs are 0x%016llx (100 ns ticks since 1601-01-01 UTC), MS-DOS dates
 * and times 0x%04x, SYSTEMTIMEs "Y-MM-DD hh:mm:ss.mmm wD" (fields in the
 * struct's order of meaning, D = wDayOfWeek; each field printed in decimal
 * whatever its value, so invalid ones such as month 13 stay readable).
 * RESULT is "ok" and the outputs, "err N" with GetLastError's N when the call
 * fails, or CompareFileTime's -1, 0 or 1.
 *
 * Build and run (TestWindowsUnderWine in wine_linux_test.go does the same):
 *   x86_64-w64-mingw32-gcc -O2 -o vectors.exe vectors.c
 *   TZ=UTC WINEDEBUG=-all wine vectors.exe
 * Written by hand for cputime; the FILETIME literals were computed with
 * exact integer calendar arithmetic and are commented with their instants. */
#include <windows.h>
#include <stdio.h>

typedef unsigned long long u64;

static FILETIME mkft(u64 v)
{
	FILETIME ft;
	ft.dwLowDateTime = (DWORD)v;
	ft.dwHighDateTime = (DWORD)(v >> 32);
	return ft;
}

static u64 ftval(const FILETIME *ft)
{
	return (u64)ft->dwHighDateTime << 32 | ft->dwLowDateTime;
}

static void print_st(const SYSTEMTIME *st)
{
	printf("%04u-%02u-%02u %02u:%02u:%02u.%03u w%u", st->wYear, st->wMonth,
	       st->wDay, st->wHour, st->wMinute, st->wSecond, st->wMilliseconds,
	       st->wDayOfWeek);
}

static void print_err(void)
{
	printf("err %lu\n", (unsigned long)GetLastError());
}

static void ft_to_st(u64 v)
{
	FILETIME ft = mkft(v);
	SYSTEMTIME st;
	printf("FileTimeToSystemTime 0x%016llx -> ", v);
	SetLastError(0);
	if (!FileTimeToSystemTime(&ft, &st)) {
		print_err();
		return;
	}
	printf("ok ");
	print_st(&st);
	printf("\n");
}

static void st_to_ft(WORD y, WORD mo, WORD dow, WORD d, WORD h, WORD mi, WORD s, WORD ms)
{
	SYSTEMTIME st = {y, mo, dow, d, h, mi, s, ms};
	FILETIME ft;
	printf("SystemTimeToFileTime ");
	print_st(&st);
	printf(" -> ");
	SetLastError(0);
	if (!SystemTimeToFileTime(&st, &ft)) {
		print_err();
		return;
	}
	printf("ok 0x%016llx\n", ftval(&ft));
}

static void ft_to_dos(u64 v)
{
	FILETIME ft = mkft(v);
	WORD date = 0, time = 0;
	printf("FileTimeToDosDateTime 0x%016llx -> ", v);
	SetLastError(0);
	if (!FileTimeToDosDateTime(&ft, &date, &time)) {
		print_err();
		return;
	}
	printf("ok 0x%04x 0x%04x\n", date, time);
}

static void dos_to_ft(WORD date, WORD time)
{
	FILETIME ft;
	printf("DosDateTimeToFileTime 0x%04x 0x%04x -> ", date, time);
	SetLastError(0);
	if (!DosDateTimeToFileTime(date, time, &ft)) {
		print_err();
		return;
	}
	printf("ok 0x%016llx\n", ftval(&ft));
}

static void compare(u64 a, u64 b)
{
	FILETIME fa = mkft(a), fb = mkft(b);
	printf("CompareFileTime 0x%016llx 0x%016llx -> %ld\n", a, b, CompareFileTime(&fa, &fb));
}

static void to_local(u64 v)
{
	FILETIME ft = mkft(v), out;
	printf("FileTimeToLocalFileTime 0x%016llx -> ", v);
	SetLastError(0);
	if (!FileTimeToLocalFileTime(&ft, &out)) {
		print_err();
		return;
	}
	printf("ok 0x%016llx\n", ftval(&out));
}

static void from_local(u64 v)
{
	FILETIME ft = mkft(v), out;
	printf("LocalFileTimeToFileTime 0x%016llx -> ", v);
	SetLastError(0);
	if (!LocalFileTimeToFileTime(&ft, &out)) {
		print_err();
		return;
	}
	printf("ok 0x%016llx\n", ftval(&out));
}

/* Instants used more than once. */
#define FT_1970 0x019db1ded53e8000ULL          /* 1970-01-01 00:00:00 */
#define FT_1980 0x01a8e79fe1d58000ULL          /* 1980-01-01 00:00:00 */
#define FT_2000_0229 0x01bf8247ebcc8000ULL     /* 2000-02-29 00:00:00 */
#define FT_2024_0229 0x01da6aa23ce90000ULL     /* 2024-02-29 00:00:00 */
#define FT_MAX_ST 0x7fff35f4f06c58f0ULL        /* 30827-12-31 23:59:59.999 */
#define FT_30828 0x7fff35f4f06c8000ULL         /* 30828-01-01 00:00:00 */
#define FT_MAX_VALID 0x7fffffffffffffffULL     /* 2^63-1: 30828-09-14 02:48:05.4775807 */
#define FT_2_63 0x8000000000000000ULL
#define FT_MAX 0xffffffffffffffffULL

int main(void)
{
	/* Each line is flushed as written, so a crash still shows where. */
	setvbuf(stdout, NULL, _IONBF, 0);

	/* FileTimeToSystemTime: epochs, sub-millisecond truncation, leap
	 * days, the top of the range and past it. */
	ft_to_st(0);                       /* 1601-01-01, a Monday */
	ft_to_st(1);                       /* one tick: rounds down to .000 */
	ft_to_st(9999);                    /* 0.9999 ms */
	ft_to_st(10000);                   /* 1 ms */
	ft_to_st(FT_1970);
	ft_to_st(FT_1980);
	ft_to_st(0x014f6598c43f7fffULL);   /* 1900-02-28 23:59:59.9999999: next is Mar 1 */
	ft_to_st(0x014f6598c43f8000ULL);   /* 1900-03-01 */
	ft_to_st(FT_2000_0229);
	ft_to_st(FT_2024_0229);
	ft_to_st(0x022f9fc03dc33fffULL);   /* 2100-02-28 23:59:59.9999999 */
	ft_to_st(0x022f9fc03dc34000ULL);   /* 2100-03-01 */
	ft_to_st(FT_MAX_ST);
	ft_to_st(FT_30828);
	ft_to_st(FT_MAX_VALID);
	ft_to_st(FT_2_63);
	ft_to_st(FT_MAX);

	/* SystemTimeToFileTime: (year, month, dayofweek, day, hour, min, sec, ms) */
	st_to_ft(1601, 1, 1, 1, 0, 0, 0, 0);
	st_to_ft(1601, 1, 6, 1, 0, 0, 0, 0);      /* wrong DayOfWeek: ignored */
	st_to_ft(1600, 12, 0, 31, 23, 59, 59, 999);
	st_to_ft(1970, 1, 4, 1, 0, 0, 0, 0);
	st_to_ft(1980, 1, 2, 1, 0, 0, 0, 0);
	st_to_ft(2000, 2, 2, 29, 0, 0, 0, 0);     /* leap: divisible by 400 */
	st_to_ft(1900, 2, 4, 29, 0, 0, 0, 0);     /* not leap: by 100 */
	st_to_ft(2100, 2, 1, 29, 0, 0, 0, 0);     /* not leap */
	st_to_ft(2024, 2, 4, 29, 0, 0, 0, 0);     /* leap */
	st_to_ft(2024, 2, 9, 29, 0, 0, 0, 0);     /* DayOfWeek 9: ignored */
	st_to_ft(2023, 2, 3, 29, 0, 0, 0, 0);     /* common year */
	st_to_ft(2023, 2, 3, 30, 0, 0, 0, 0);
	st_to_ft(2024, 4, 3, 31, 0, 0, 0, 0);     /* April has 30 days */
	st_to_ft(2024, 12, 2, 31, 23, 59, 59, 999);
	st_to_ft(2024, 0, 0, 1, 0, 0, 0, 0);      /* month 0 */
	st_to_ft(2024, 13, 0, 1, 0, 0, 0, 0);     /* month 13 */
	st_to_ft(2024, 1, 0, 0, 0, 0, 0, 0);      /* day 0 */
	st_to_ft(2024, 1, 0, 32, 0, 0, 0, 0);     /* day 32 */
	st_to_ft(2024, 1, 1, 1, 24, 0, 0, 0);     /* hour 24 */
	st_to_ft(2024, 1, 1, 1, 23, 60, 0, 0);    /* minute 60 */
	st_to_ft(2024, 1, 1, 1, 23, 59, 60, 0);   /* second 60: no leap seconds */
	st_to_ft(2024, 1, 1, 1, 23, 59, 59, 1000); /* milliseconds 1000 */
	st_to_ft(30827, 12, 0, 31, 23, 59, 59, 999);
	st_to_ft(30828, 1, 0, 1, 0, 0, 0, 0);
	st_to_ft(30828, 9, 0, 14, 2, 48, 5, 477);  /* just below 2^63 */
	st_to_ft(65535, 1, 0, 1, 0, 0, 0, 0);
	st_to_ft(0, 1, 0, 1, 0, 0, 0, 0);

	/* FileTimeToDosDateTime: the range 1980-2107 and its edges, and how
	 * odd seconds and fractions map to the 2-second steps. */
	ft_to_dos(0);
	ft_to_dos(0x01a8e79fe0a45300ULL);  /* 1979-12-31 23:59:58 */
	ft_to_dos(0x01a8e79fe0a45301ULL);  /* 1979-12-31 23:59:58.0000001 */
	ft_to_dos(0x01a8e79fe13ce980ULL);  /* 1979-12-31 23:59:59 */
	ft_to_dos(FT_1980);
	ft_to_dos(FT_1980 + 1);            /* 1980-01-01 00:00:00.0000001 */
	ft_to_dos(FT_1980 + 10000000);     /* 1980-01-01 00:00:01 */
	ft_to_dos(0x01da6afc69316a80ULL);  /* 2024-02-29 10:45:29 */
	ft_to_dos(0x01da6afc69ca0100ULL);  /* 2024-02-29 10:45:30 */
	ft_to_dos(0x01da6afc6a629780ULL);  /* 2024-02-29 10:45:31 */
	ft_to_dos(0x01da6afc6afb2dffULL);  /* 2024-02-29 10:45:31.9999999 */
	ft_to_dos(0x023868b866d29300ULL);  /* 2107-12-31 23:59:58 */
	ft_to_dos(0x023868b866d29301ULL);  /* 2107-12-31 23:59:58.0000001 */
	ft_to_dos(0x023868b8676b2980ULL);  /* 2107-12-31 23:59:59 */
	ft_to_dos(0x023868b86803c000ULL);  /* 2108-01-01 00:00:00 */
	ft_to_dos(FT_MAX_ST);
	ft_to_dos(FT_2_63);

	/* DosDateTimeToFileTime: date = (year-1980)<<9 | month<<5 | day,
	 * time = hour<<11 | minute<<5 | seconds/2. */
	dos_to_ft(0x0021, 0x0000);         /* 1980-01-01 00:00:00 */
	dos_to_ft(0xff9f, 0xbf7d);         /* 2107-12-31 23:59:58 */
	dos_to_ft(0x285d, 0x0000);         /* 2000-02-29 */
	dos_to_ft(0x585d, 0x5b6f);         /* 2024-02-29 11:27:30 */
	dos_to_ft(0x565d, 0x0000);         /* 2023-02-29: common year */
	dos_to_ft(0xf05d, 0x0000);         /* 2100-02-29: common year */
	dos_to_ft(0x589f, 0x0000);         /* 2024-04-31 */
	dos_to_ft(0x0000, 0x0000);         /* month 0, day 0 */
	dos_to_ft(0x0001, 0x0000);         /* month 0 */
	dos_to_ft(0x0020, 0x0000);         /* day 0 */
	dos_to_ft(0x01a1, 0x0000);         /* month 13 */
	dos_to_ft(0x01e1, 0x0000);         /* month 15 */
	dos_to_ft(0x0021, 0x001d);         /* seconds field 29: 58 s */
	dos_to_ft(0x0021, 0x001e);         /* seconds field 30: 60 s */
	dos_to_ft(0x0021, 0x001f);         /* seconds field 31: 62 s */
	dos_to_ft(0x0021, 0x0780);         /* minute 60 */
	dos_to_ft(0x0021, 0xc000);         /* hour 24 */
	dos_to_ft(0xffff, 0xffff);

	/* CompareFileTime: the halves compare as unsigned 32-bit values. */
	compare(0, 0);
	compare(0, 1);
	compare(1, 0);
	compare(0x00000000ffffffffULL, 0x0000000100000000ULL);
	compare(0x0000000100000000ULL, 0x00000000ffffffffULL);
	compare(FT_2_63, FT_MAX_VALID);
	compare(FT_MAX, 0);
	compare(FT_MAX, FT_MAX);

	/* Local conversions with the time zone fixed to UTC (TZ=UTC): the
	 * identity, whatever Windows' range checks are. */
	to_local(0);
	to_local(FT_1970);
	to_local(FT_MAX_VALID);
	from_local(0);
	from_local(FT_1970);
	from_local(FT_MAX_VALID);
	return 0;
}
