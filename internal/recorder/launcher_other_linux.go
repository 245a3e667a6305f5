//go:build linux && !amd64 && !arm64

package recorder

import "debug/elf"

// No launcher has been written for this architecture yet (see
// launcher_linux.go): Start returns ErrNotSupported and run runs CMD
// unrecorded.
const launcherMachine = elf.EM_NONE

var launcherCode []byte
