// Package buildinfo says which build of cputime is running: the module
// version, the VCS revision and the Go version, from the build information
// the go command writes into every binary (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is one binary's build.
type Info struct {
	// Version is the main module's version: "v0.3.0" when built by
	// "go install …@v0.3.0", "(devel)" from a checkout (with the go command's
	// pseudo-version when the checkout is clean and Go stamps it).
	Version string
	// Revision is the VCS commit the binary was built from, with "+dirty"
	// when the work tree had changes; "unknown" when the go command did not
	// stamp one (go test, go run, -buildvcs=false, or go install …@version,
	// whose version names the commit).
	Revision string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Read returns this binary's build information.
func Read() Info {
	info := Info{Version: "(devel)", Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "unknown" {
		info.Revision += "+dirty"
	}
	return info
}

// String is the one line "cputime version" prints.
func (i Info) String() string {
	return fmt.Sprintf("cputime %s (revision %s, %s, %s/%s)", i.Version, i.Revision, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}
