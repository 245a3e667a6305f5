//go:build linux && !amd64 && !arm64

package recorder

// No start-up stub has been written for this architecture yet (see
// stub_linux.go): Start returns ErrNotSupported and run runs CMD
// unrecorded.
const stubMachine = 0

var stubCode []byte
