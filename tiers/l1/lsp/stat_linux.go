//go:build linux

package lsp

import (
	"os"
	"syscall"
)

// changeOf is what of a file's stat moves on any write that keeps its size
// and modification time (touch -d, a copy that preserves times): the inode
// and the status-change time.
func changeOf(fi os.FileInfo) (ino uint64, ctime int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return st.Ino, st.Ctim.Nano()
}
