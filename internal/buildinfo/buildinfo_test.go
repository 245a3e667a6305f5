package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The test binary carries build information too: its Go version is the
// runtime's, and the line names it.
func TestRead(t *testing.T) {
	i := Read()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in the test binary")
	}
	if i.GoVersion != bi.GoVersion || i.GoVersion != runtime.Version() {
		t.Errorf("GoVersion %q; build info %q, runtime %q", i.GoVersion, bi.GoVersion, runtime.Version())
	}
	if i.Version == "" || i.Revision == "" {
		t.Errorf("empty field in %+v", i)
	}
	if s := i.String(); !strings.HasPrefix(s, "cputime ") || !strings.Contains(s, i.GoVersion) {
		t.Errorf("String() = %q", s)
	}
}
