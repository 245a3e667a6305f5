//go:build linux

package recorder

import "testing"

// launcherCode is testdata/launcher_arm64.s, assembled.
func TestLauncherCode(t *testing.T) {
	checkLauncherCode(t, "aarch64-linux-gnu-as", "aarch64-linux-gnu-objcopy", "testdata/launcher_arm64.s")
}
