//go:build !linux

package sandbox

import "os"

type dirent struct {
	name      string
	dir, link bool
}

func listDir(d string) []dirent {
	list, err := os.ReadDir(d)
	if err != nil {
		return nil
	}
	out := make([]dirent, len(list))
	for i, e := range list {
		out[i] = dirent{name: e.Name(), dir: e.IsDir(), link: e.Type()&os.ModeSymlink != 0}
	}
	return out
}
