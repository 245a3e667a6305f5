//go:build !linux && !windows

package top

import (
	"fmt"
	"os"
	"runtime"
)

type terminal struct{ out *os.File }

func openTerminal(in, out *os.File) (*terminal, error) {
	return nil, fmt.Errorf("no interactive view on %s", runtime.GOOS)
}

func (t *terminal) size() (int, int) { return 80, 24 }
func (t *terminal) restore()         {}

var resizeSignals []os.Signal

var termSignals = []os.Signal{os.Interrupt}
