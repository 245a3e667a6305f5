package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollNow polls one descriptor without blocking. poll(2), where the
// architecture has it, skips ppoll's timespec and signal-mask handling:
// measurably cheaper on the hot path of every handle read.
func pollNow(pfd *unix.PollFd) (int, unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_POLL, uintptr(unsafe.Pointer(pfd)), 1, 0)
	return int(n), e
}
