package procfs

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestAppendDirIDsAgainstReaddir(t *testing.T) {
	dir := t.TempDir()
	want := []int{1, 7, 42, 100000, 2147483647}
	for _, id := range want {
		os.Mkdir(dir+"/"+strconv.Itoa(id), 0o755)
	}
	for _, junk := range []string{"self", "0", "007", "2147483648", "12a", "-1"} {
		os.Mkdir(dir+"/"+junk, 0o755)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for range 2 { // again from the start, on the same descriptor
		got, _, err := AppendDirIDs(fd, nil, nil)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("got %v, %v; want %v", got, err, want)
		}
	}
	// /proc itself, against os.ReadDir.
	pfd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(pfd)
	got, _, err := AppendDirIDs(pfd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, os.Getpid()) || !slices.IsSorted(got) {
		t.Errorf("/proc: %d ids, sorted %v, ours among them %v", len(got), slices.IsSorted(got), slices.Contains(got, os.Getpid()))
	}
}

// A task directory of 1,000 threads, listed many times: every listing has
// every thread. proc can return a short batch before the end (fewer
// entries than the buffer holds); a listing that took one for the end
// would lose threads.
func TestAppendDirIDsManyThreads(t *testing.T) {
	const n = 1000
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread() // a thread of its own; it exits with the goroutine
			started <- struct{}{}
			<-release
		}()
	}
	for range n {
		<-started
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip(err)
	}
	fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Close(fd)
	for i := range 200 {
		got, calls, err := AppendDirIDs(fd, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The Go runtime may start (never here end) a thread meanwhile.
		if len(got) < len(ents) {
			t.Fatalf("listing %d: %d threads in %d getdents calls; os.ReadDir saw %d", i, len(got), calls, len(ents))
		}
	}
}
