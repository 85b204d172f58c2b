//go:build unix

package privfile

import (
	"io/fs"
	"os"
	"syscall"
)

func ownedByMe(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}
