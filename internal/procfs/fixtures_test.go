package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureRoot is the fixture tree, shaped like /proc:
//
//	26231  procfs-demo, three threads 26231..26233 (one named demo-worker)
//	26240  named "a) (b"
//	26250  named "x y\nz\\w": a space, a newline and a backslash
//	26260  saturated counters (18446744073709551615) in the process line and
//	       in thread 26261; thread 26262 vanished: listed, no files
//	26270  truncated stat, status, task stat and schedstat
//	self, thread-self, sys, stat  non-numeric entries; stat has two CPUs
const fixtureRoot = "testdata/fixtures/proc"

func fixtureFS() FS { return NewFS(fixtureRoot) }

// readFixture returns the bytes of a fixture file, path relative to the
// fixture root.
func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureFiles returns the contents of every fixture file with the given
// base name, to seed fuzzing.
func fixtureFiles(t testing.TB, base string) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir(fixtureRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && d.Name() == base {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no fixture named %s", base)
	}
	return out
}
