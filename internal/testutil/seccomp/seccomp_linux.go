// Package seccomp installs the filters tests use to stand in for a
// container's seccomp profile: one system call answered with an errno.
package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Deny makes system call nr fail with errno in every thread of the
// process (SECCOMP_FILTER_FLAG_TSYNC), as Docker's default profile
// answers kcmp (EPERM) or perf_event_open (EACCES). It sets
// no_new_privs, which the filter needs without CAP_SYS_ADMIN. The filter
// does not check the architecture: it is for amd64 and arm64, where the
// test binary's system calls are all of one.
func Deny(nr uintptr, errno unix.Errno) error {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return fmt.Errorf("the filter checks no architecture; it is written for amd64 and arm64, not %s", runtime.GOARCH)
	}
	const seccompDataNr = 0 // offsetof(struct seccomp_data, nr)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: seccompDataNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: uint32(nr)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
