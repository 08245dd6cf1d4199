//go:build !linux

package core

import "io/fs"

func statOf(fi fs.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
}
