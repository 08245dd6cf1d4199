package core

import (
	"io/fs"
	"syscall"
)

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		// A file replaced by another (a rename over it, cp -p) shows in
		// the inode and the change time even when size and mtime match.
		st.ino = sys.Ino
		st.ctime = sys.Ctim.Nano()
	}
	return st
}
