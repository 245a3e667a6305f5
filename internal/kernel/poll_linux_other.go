//go:build linux && !amd64

package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollNow polls one descriptor without blocking (no poll(2) here).
func pollNow(pfd *unix.PollFd) (int, unix.Errno) {
	var zero unix.Timespec
	n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return int(n), e
}
