//go:build linux

package recorder

import "testing"

// launcherCode is testdata/launcher_amd64.s, assembled.
func TestLauncherCode(t *testing.T) {
	checkLauncherCode(t, "as", "objcopy", "testdata/launcher_amd64.s")
}
