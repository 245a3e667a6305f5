package win32_test

import "golang.org/x/sys/windows"

// vectorsUnderWine reports whether this Windows process runs under Wine,
// whose ntdll exports wine_get_version and Windows' does not.
func vectorsUnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
