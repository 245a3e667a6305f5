//go:build !unix

package cli

import (
	"io/fs"
	"os"
)

// keepOwner does nothing where files have no Unix owner (Windows keeps the
// creator's, as any replacing editor does).
func keepOwner(*os.File, fs.FileInfo) {}
