package cli

import "github.com/cputime/cputime/internal/procfs"

// processOfThread returns the process of thread id when id names a thread
// that is not its process's main thread (its status Tgid differs), else 0.
// /proc/TID exists for every thread, though only processes are listed.
func processOfThread(id int) int {
	s, err := procfs.NewFS("/proc").ReadStatus(id)
	if err != nil || s.Tgid == id || s.Tgid <= 0 {
		return 0
	}
	return s.Tgid
}
