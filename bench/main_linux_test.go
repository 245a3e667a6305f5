//go:build linux

package bench

import (
	"os"
	"testing"

	"github.com/cputime/cputime/bench/internal/child"
)

func TestMain(m *testing.M) {
	child.Main() // the test binary doubles as the measured child
	os.Exit(m.Run())
}

func startChild(b *testing.B, mode string) *child.Child {
	b.Helper()
	c, err := child.Start(mode)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Stop)
	return c
}
