//go:build linux

package recorder

import "testing"

// stubCode is testdata/stub_arm64.s, assembled.
func TestStubCode(t *testing.T) {
	checkStubCode(t, "aarch64-linux-gnu-as", "aarch64-linux-gnu-objcopy", "testdata/stub_arm64.s")
}
