//go:build linux

package recorder

import "testing"

// stubCode is testdata/stub_amd64.s, assembled.
func TestStubCode(t *testing.T) {
	checkStubCode(t, "as", "objcopy", "testdata/stub_amd64.s")
}
