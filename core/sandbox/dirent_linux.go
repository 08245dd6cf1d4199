//go:build linux

package sandbox

import (
	"syscall"
	"unsafe"
)

// dirent is one entry of a directory listing: its name and whether it is
// a directory or a symbolic link, as the listing says (an entry whose type
// the file system does not report is looked up).
type dirent struct {
	name      string
	dir, link bool
}

// listDir lists directory d with plain system calls: os.ReadDir opens it
// as an os.File, which registers it with the runtime's poller (started for
// that), and sorts and wraps every entry, a cost on the start of every
// contained command for a listing of a few names. "." and ".." are left
// out; nil if d cannot be read.
func listDir(d string) []dirent {
	fd, err := syscall.Open(d, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var buf [8192]byte
	var out []dirent
	for {
		n, err := syscall.Getdents(fd, buf[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return out
		}
		out = appendDirents(out, buf[:n], func(name string) (dir, link bool) {
			var st syscall.Stat_t
			if syscall.Lstat(d+"/"+name, &st) == nil {
				return st.Mode&syscall.S_IFMT == syscall.S_IFDIR, st.Mode&syscall.S_IFMT == syscall.S_IFLNK
			}
			return false, false
		})
	}
}

// appendDirents appends the entries of a getdents64 buffer to out; lookup
// gives the type of an entry the listing does not.
func appendDirents(out []dirent, buf []byte, lookup func(name string) (dir, link bool)) []dirent {
	n := len(buf)
	for off := 0; off+19 <= n; {
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
		if reclen < 20 || off+reclen > n {
			return out
		}
		typ := buf[off+18]
		name := buf[off+19 : off+reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		off += reclen
		if s := string(name); s != "." && s != ".." {
			e := dirent{name: s, dir: typ == syscall.DT_DIR, link: typ == syscall.DT_LNK}
			if typ == syscall.DT_UNKNOWN {
				e.dir, e.link = lookup(s)
			}
			out = append(out, e)
		}
	}
	return out
}
