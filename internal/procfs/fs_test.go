package procfs

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFSRoot(t *testing.T) {
	for _, fs := range []FS{{}, NewFS(""), NewFS("/proc")} {
		if got := fs.Root(); got != "/proc" {
			t.Errorf("Root() = %q, want /proc", got)
		}
	}
	fs := NewFS("testdata")
	if got, want := fs.Path("1", "task", "2", "stat"), filepath.Join("testdata", "1", "task", "2", "stat"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if got := fs.Path(); got != "testdata" {
		t.Errorf("Path() = %q, want testdata", got)
	}
}

func TestParseID(t *testing.T) {
	good := map[string]int{"1": 1, "26231": 26231, "4194304": 4194304, "2147483647": math.MaxInt32}
	for s, want := range good {
		if got, err := ParseID(s); err != nil || got != want {
			t.Errorf("ParseID(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{
		"", "0", "00", "01", "-1", "+1", " 1", "1 ", "1\n", "self", "thread-self", "1a", "0x10",
		"2147483648", "4294967296", "9999999999", "99999999999999999999", "1.0", "１",
	} {
		if got, err := ParseID(s); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) = %d, %v; want ErrInvalidID", s, got, err)
		}
	}
}

func TestPIDsFixtures(t *testing.T) {
	got, err := fixtureFS().PIDs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{26231, 26240, 26250, 26260, 26270}; !reflect.DeepEqual(got, want) {
		t.Errorf("PIDs() = %v, want %v", got, want)
	}
	if _, err := NewFS(filepath.Join(t.TempDir(), "none")).PIDs(); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("PIDs of a missing root: %v, want fs.ErrNotExist", err)
	}
}

func TestTIDsFixtures(t *testing.T) {
	fs := fixtureFS()
	tests := map[int][]int{
		26231: {26231, 26232, 26233},
		26240: {26240},
		26260: {26260, 26261, 26262}, // 26262 vanished but is still listed
	}
	for pid, want := range tests {
		if got, err := fs.TIDs(pid); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("TIDs(%d) = %v, %v; want %v", pid, got, err, want)
		}
	}
	if _, err := fs.TIDs(4242); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("TIDs(4242): %v, want fs.ErrNotExist", err)
	}
	if _, err := fs.TIDs(-4); !errors.Is(err, ErrInvalidID) {
		t.Errorf("TIDs(-4): %v, want ErrInvalidID", err)
	}
}

func TestReadFileInto(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 100000} {
		content := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		path := filepath.Join(dir, "f")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, bufCap := range []int{0, 1, 600, size, size + 1, 2 * size} {
			buf := make([]byte, 3, bufCap+3) // len(buf) must not matter
			got, err := ReadFileInto(path, buf)
			if err != nil || !bytes.Equal(got, content) {
				t.Errorf("size %d cap %d: got %d bytes, %v", size, cap(buf), len(got), err)
			}
			// A buffer large enough is used, not replaced.
			if cap(buf) > size && cap(buf) >= minReadSize && len(got) > 0 && &got[0] != &buf[:1][0] {
				t.Errorf("size %d cap %d: buffer replaced though large enough", size, cap(buf))
			}
		}
	}
	if _, err := ReadFileInto(filepath.Join(dir, "none"), nil); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("ReadFileInto of a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := ReadFileInto(dir, nil); err == nil {
		t.Errorf("ReadFileInto of a directory succeeded")
	}
}
