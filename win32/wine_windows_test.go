package win32_test

import "golang.org/x/sys/windows"

// runningOnWine reports whether the test runs under Wine rather than on
// Windows itself: Wine's ntdll exports wine_get_version, Windows' does not.
func runningOnWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
