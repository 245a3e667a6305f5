/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks: Go 1.22
 * and later Windows binaries import ProcessPrng from it at start-up. It
 * fills the buffer from RtlGenRandom (advapi32's SystemFunction036), the
 * system's cryptographic generator, which Wine implements. Built with the
 * MinGW cross compiler and copied into the Wine prefix's system32 by
 * .ci/wine-setup. */
#include <windows.h>

typedef BOOLEAN (WINAPI *genrandom_fn)(PVOID, ULONG);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	static genrandom_fn gen;
	if (gen == NULL) {
		HMODULE advapi = LoadLibraryA("advapi32.dll");
		if (advapi == NULL)
			return FALSE;
		gen = (genrandom_fn)GetProcAddress(advapi, "SystemFunction036");
		if (gen == NULL)
			return FALSE;
	}
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!gen(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
