package procfs_test

import (
	"fmt"
	"os"

	"github.com/cputime/cputime/internal/procfs"
)

func ExampleParseStat() {
	line := []byte("4242 (a) (b) S 1 4242 4242 0 -1 4194304 96 0 0 0 152 41 0 0 20 0 3 0 25314 1264345088 2841\n")
	s, err := procfs.ParseStat(line)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("pid %d comm %q utime %d stime %d ticks, started %d ticks after boot, cpu %d\n",
		s.PID, s.Comm, s.UTime, s.STime, s.StartTime, s.Processor)
	// Output: pid 4242 comm "a) (b" utime 152 stime 41 ticks, started 25314 ticks after boot, cpu -1
}

func ExampleFS_ReadTaskStat() {
	fs := procfs.NewFS("") // /proc
	pid := os.Getpid()
	tids, err := fs.TIDs(pid)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tid := range tids {
		s, err := fs.ReadTaskStat(pid, tid)
		if err != nil {
			continue // the thread exited since it was listed
		}
		fmt.Printf("thread %d %s: %d+%d ticks\n", tid, s.Comm, s.UTime, s.STime)
	}
}

// A kept-open File reads a thread's times again and again without
// allocating, and cannot confuse it with a later task that reuses its id.
func ExampleFile() {
	f, err := procfs.OpenFile("/proc/thread-self/stat")
	if err != nil {
		fmt.Println(err) // not Linux
		return
	}
	defer f.Close()
	var buf [1024]byte
	for range 3 {
		n, err := f.ReadAt0(buf[:])
		if err != nil {
			fmt.Println(err) // wraps syscall.ESRCH once the thread is gone
			return
		}
		s, err := procfs.ParseStat(buf[:n])
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(s.UTime, s.STime)
	}
}
