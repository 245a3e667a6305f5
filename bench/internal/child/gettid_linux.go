package child

import "syscall"

func gettid() int { return syscall.Gettid() }
