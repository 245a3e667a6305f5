//go:build linux

package recorder

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// stubCode is testdata/stub_amd64.s, assembled.
func TestStubCode(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as is not installed (binutils)")
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy is not installed (binutils)")
	}
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "stub.o"), filepath.Join(dir, "stub.bin")
	if out, err := exec.Command(as, "-o", obj, "testdata/stub_amd64.s").CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, stubCode) {
		t.Errorf("stubCode is not testdata/stub_amd64.s:\n got % x\nwant % x", stubCode, code)
	}
}
