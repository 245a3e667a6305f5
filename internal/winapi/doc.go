// Package winapi declares the Win32 calls that golang.org/x/sys/windows
// lacks, for the Windows backends of cputime and cputime/win32. The
// bindings in zsyscall_windows.go are generated from the //sys lines of
// winapi_windows.go by mkwinsyscall: run go generate here (on any OS) after
// changing them, never edit the output by hand. On other systems the
// package is empty.
package winapi

//go:generate go run golang.org/x/sys/windows/mkwinsyscall@v0.49.0 -output zsyscall_windows.go winapi_windows.go
