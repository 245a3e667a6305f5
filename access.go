package cputime

import (
	"fmt"
	"strings"
)

// Access is a set of Win32 access rights, requested when a handle is opened
// (OpenProcessAccess, OpenThreadAccess) and checked by every query through
// it, as Windows checks them. The values are the Win32 ones.
//
// On Linux the rights map onto what the kernel lets the caller see:
//
//   - ProcessQueryLimitedInformation and ThreadQueryLimitedInformation are
//     granted when the task's /proc directory is readable by the caller,
//     which is always the case unless /proc is mounted with hidepid
//     (hidepid=noaccess: ErrAccessDenied; hidepid=invisible: the task is
//     hidden and opening it fails with ErrNotFound, as the kernel hides even
//     its existence). Every query of this package needs only this right.
//   - ProcessQueryInformation and ThreadQueryInformation are granted when
//     the caller may read the task as a debugger would: ptrace access mode
//     PTRACE_MODE_READ with the caller's real credentials (the same user
//     and a dumpable task, or CAP_SYS_PTRACE), checked with kcmp(2). Where
//     kcmp cannot be asked (not built in, or forbidden by a seccomp filter,
//     found by asking it once about the caller itself), reading
//     /proc/PID/io makes the check instead, with the caller's filesystem
//     credentials: the answers differ only for a caller whose fsuid was set
//     apart from its uid (setfsuid). This is what Windows asks of
//     PROCESS_QUERY_INFORMATION on another user's process. As on Windows,
//     it implies the limited right.
//   - Synchronize (waiting for the task to exit) is granted with the
//     limited right: a pidfd needs no permission.
//
// On Windows the rights are passed to OpenProcess and OpenThread unchanged.
type Access uint32

// Access rights, with their Win32 values.
const (
	ProcessQueryInformation        Access = 0x0400     // PROCESS_QUERY_INFORMATION
	ProcessQueryLimitedInformation Access = 0x1000     // PROCESS_QUERY_LIMITED_INFORMATION
	ThreadQueryInformation         Access = 0x0040     // THREAD_QUERY_INFORMATION
	ThreadQueryLimitedInformation  Access = 0x0800     // THREAD_QUERY_LIMITED_INFORMATION
	Synchronize                    Access = 0x00100000 // SYNCHRONIZE
)

// Default rights of OpenProcess and OpenThread: enough for every query and
// for Wait, and granted to any caller that can see the task.
const (
	defaultProcessAccess = ProcessQueryLimitedInformation | Synchronize
	defaultThreadAccess  = ThreadQueryLimitedInformation | Synchronize
	allProcessAccess     = ProcessQueryInformation | ProcessQueryLimitedInformation | Synchronize
	allThreadAccess      = ThreadQueryInformation | ThreadQueryLimitedInformation | Synchronize
)

var accessNames = []struct {
	a    Access
	name string
}{
	{ProcessQueryInformation, "PROCESS_QUERY_INFORMATION"},
	{ProcessQueryLimitedInformation, "PROCESS_QUERY_LIMITED_INFORMATION"},
	{ThreadQueryInformation, "THREAD_QUERY_INFORMATION"},
	{ThreadQueryLimitedInformation, "THREAD_QUERY_LIMITED_INFORMATION"},
	{Synchronize, "SYNCHRONIZE"},
}

// String returns the Win32 names of the rights in a, joined by "|".
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var names []string
	for _, n := range accessNames {
		if a&n.a != 0 {
			names = append(names, n.name)
			a &^= n.a
		}
	}
	if a != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(a)))
	}
	return strings.Join(names, "|")
}

// checkAccess validates requested rights for a kind of handle and adds the
// rights Windows implies: QUERY_INFORMATION grants QUERY_LIMITED_INFORMATION.
func checkAccess(a, all, full, limited Access) (Access, error) {
	if bad := a &^ all; bad != 0 {
		return 0, fmt.Errorf("access rights %v: %w (this handle kind grants only %v)", bad, ErrInvalidArgument, all)
	}
	if a&full != 0 {
		a |= limited
	}
	return a, nil
}

// need fails with ErrAccessDenied unless the handle holds one of want.
func need(have, want Access) error {
	if have&want == 0 {
		return fmt.Errorf("%w: the handle was not opened with %v", ErrAccessDenied, want)
	}
	return nil
}
