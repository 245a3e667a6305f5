package procfs

import (
	"os"
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
