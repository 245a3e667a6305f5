//go:build unix

package cli

import (
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives f, which replaces old, old's owner and group where they
// are not ours already: root rewriting a user's file leaves it the user's.
// Only root may give a file away; anyone else keeps the file as theirs.
func keepOwner(f *os.File, old fs.FileInfo) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return
	}
	f.Chown(int(st.Uid), int(st.Gid))
}
