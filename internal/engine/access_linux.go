package engine

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/procfs"
)

const kcmpVM = 1 // KCMP_VM, include/uapi/linux/kcmp.h

// kcmpUsable reports whether kcmp(2) answers this process at all. kcmp
// denies with EPERM when the ptrace check fails, and a seccomp filter that
// forbids the call (Docker's default profile) answers EPERM too; comparing
// the caller with itself always passes the ptrace check, so EPERM (or
// ENOSYS, without CONFIG_KCMP) there means kcmp cannot be asked.
var kcmpUsable = sync.OnceValue(func() bool {
	return kcmp(selfPID, selfPID) == 0
})

func kcmp(pid1, pid2 int) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), kcmpVM, 0, 0, 0)
	return e
}

// ptraceReadable checks that the caller may read task id as a debugger
// would, with its real credentials (PTRACE_MODE_READ_REALCREDS): kcmp(2)
// makes exactly that check of both tasks and denies with EPERM. Only where
// kcmp cannot be asked (not built in, or forbidden by a seccomp filter) is
// the check made by reading /proc/ID/io, which asks the same question with
// the caller's filesystem credentials (PTRACE_MODE_READ_FSCREDS): the two
// differ only for a caller whose fsuid was changed apart from its uid.
func (eng *Engine) ptraceReadable(id int) error {
	if kcmpUsable() {
		switch e := kcmp(selfPID, id); e {
		case 0:
			return nil
		case unix.EPERM, unix.EACCES:
			return fmt.Errorf("ptrace read access: %w", sysError(e))
		case unix.ESRCH:
			return sysError(e)
		default:
			return fmt.Errorf("kcmp %d: %w", id, e)
		}
	}
	var buf [512]byte
	var path [64]byte
	if _, err := procfs.ReadFileAt(unix.AT_FDCWD, eng.procPath(path[:0], id, "io"), buf[:]); err != nil {
		return fmt.Errorf("reading /proc/%d/io: %w", id, sysError(err))
	}
	return nil
}
